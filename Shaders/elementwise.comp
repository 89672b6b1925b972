#version 450
#extension GL_GOOGLE_include_directive : require
// Elementwise operations, one invocation per output element, chosen by OPERATION:
//   OPERATION_ADD:       a[i] += b[i]                                   (count · width elements)
//   OPERATION_SILU_GATE: out[t, j] = silu(a[t, j]) · a[t, width + j]    a: (count, 2 · width)
//                        (with HALF_COPY one invocation per 4 outputs, also written as Float16
//                        pairs, as OPERATION_TO_HALF would convert them; width a multiple of 4)
//   OPERATION_TO_HALF:   halves[i] = a[offset + 2i], a[offset + 2i + 1] as a Float16 pair
//                        (count · width / 2 pairs; width even)
//   OPERATION_ADD_PARTS: out[i] = Σ_p b[p · count · width + i], a[i] += out[i]   (offset parts: the
//                        partial sums of a prefill product split over its columns, added up and
//                        into the residual; with VEC4 4 elements an invocation, count · width a
//                        multiple of 4)
#include "common.glsl"

#if defined(OPERATION_SILU_GATE) && defined(HALF_COPY)
// 4 outputs an invocation, every access 16 bytes wide (8 for the copy): width a multiple of 4.
layout(std430, binding = 0) readonly buffer First { vec4 a[]; };             // (count, 2 · width / 4) gate | up
layout(std430, binding = 1) writeonly buffer Second { vec4 b[]; };           // (count, width / 4)
layout(std430, binding = 2) writeonly buffer HalfCopy { uvec2 half_copy[]; }; // (count, width / 4) 4 Float16 of out
#elif defined(OPERATION_ADD_PARTS) && defined(VEC4)
// 4 elements an invocation, 16 bytes wide: count · width a multiple of 4.
layout(std430, binding = 0) buffer First { vec4 a4[]; };                  // (count, width / 4)
layout(std430, binding = 1) readonly buffer Second { vec4 b4[]; };        // (parts, count, width / 4)
layout(std430, binding = 2) writeonly buffer Third { vec4 out_sum4[]; };  // (count, width / 4)
#else
layout(std430, binding = 0) buffer First { float a[]; };
#ifdef OPERATION_TO_HALF
layout(std430, binding = 1) writeonly buffer Second { uint halves[]; }; // (count, width / 2) Float16 pairs
#else
layout(std430, binding = 1) buffer Second { float b[]; };
#endif
#ifdef OPERATION_ADD_PARTS
layout(std430, binding = 2) writeonly buffer Third { float out_sum[]; }; // (count, width) the parts' sum
#endif
#endif

layout(push_constant) uniform ElementwiseConstants {
    uint count;  // rows
    uint width;  // columns of the output
    uint offset; // elements of `a` before the first row read (OPERATION_TO_HALF); parts (OPERATION_ADD_PARTS)
} pc;

void main() {
    const uint index = gl_GlobalInvocationID.x;
#if defined(OPERATION_TO_HALF)
    if (index < pc.count * pc.width / 2) {
        halves[index] = packHalf2x16(vec2(a[pc.offset + 2 * index], a[pc.offset + 2 * index + 1]));
    }
    return;
#endif
#if defined(OPERATION_SILU_GATE) && defined(HALF_COPY)
    const uint width4 = pc.width / 4;
    if (index < pc.count * width4) {
        const uint t = index / width4;
        const uint j = index % width4;
        const vec4 gate = a[2 * t * width4 + j];
        const vec4 up = a[2 * t * width4 + width4 + j];
        const vec4 value = gate / (1.0 + exp(-gate)) * up;
        b[index] = value;
        half_copy[index] = uvec2(packHalf2x16(value.xy), packHalf2x16(value.zw));
    }
#elif defined(OPERATION_ADD_PARTS) && defined(VEC4)
    const uint total4 = pc.count * pc.width / 4;
    if (index < total4) {
        vec4 sum = vec4(0.0);
        for (uint part = 0; part < pc.offset; ++part) {
            sum += b4[part * total4 + index];
        }
        out_sum4[index] = sum;
        a4[index] += sum;
    }
#else
    if (index >= pc.count * pc.width) {
        return;
    }
#if defined(OPERATION_ADD)
    a[index] += b[index];
#elif defined(OPERATION_ADD_PARTS)
    float sum = 0.0;
    for (uint part = 0; part < pc.offset; ++part) {
        sum += b[part * pc.count * pc.width + index];
    }
    out_sum[index] = sum;
    a[index] += sum;
#elif defined(OPERATION_SILU_GATE)
    const uint t = index / pc.width;
    const uint j = index % pc.width;
    const float gate = a[t * 2 * pc.width + j];
    const float up = a[t * 2 * pc.width + pc.width + j];
    b[index] = gate / (1.0 + exp(-gate)) * up;
#elif !defined(OPERATION_TO_HALF)
#error OPERATION_ADD, OPERATION_ADD_PARTS, OPERATION_SILU_GATE or OPERATION_TO_HALF must be defined
#endif
#endif
}
