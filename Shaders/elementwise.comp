#version 450
#extension GL_GOOGLE_include_directive : require
// Elementwise operations, one invocation per output element, chosen by OPERATION:
//   OPERATION_ADD:       a[i] += b[i]                                   (count · width elements)
//   OPERATION_SILU_GATE: out[t, j] = silu(a[t, j]) · a[t, width + j]    a: (count, 2 · width)
//                        (with HALF_COPY one invocation per pair of outputs, also written as a
//                        Float16 pair, as OPERATION_TO_HALF would convert them; width even)
//   OPERATION_TO_HALF:   halves[i] = a[offset + 2i], a[offset + 2i + 1] as a Float16 pair
//                        (count · width / 2 pairs; width even)
//   OPERATION_ADD_PARTS: out[i] = Σ_p b[p · count · width + i], a[i] += out[i]   (offset parts: the
//                        partial sums of a prefill product split over its columns, added up and
//                        into the residual)
#include "common.glsl"

layout(std430, binding = 0) buffer First { float a[]; };
#ifdef OPERATION_TO_HALF
layout(std430, binding = 1) writeonly buffer Second { uint halves[]; }; // (count, width / 2) Float16 pairs
#else
layout(std430, binding = 1) buffer Second { float b[]; };
#endif
#ifdef OPERATION_ADD_PARTS
layout(std430, binding = 2) writeonly buffer Third { float out_sum[]; }; // (count, width) the parts' sum
#endif
#ifdef HALF_COPY
layout(std430, binding = 2) writeonly buffer HalfCopy { uint half_copy[]; }; // (count, width / 2) Float16 pairs of out
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
    if (index < pc.count * pc.width / 2) {
        const uint t = 2 * index / pc.width;
        const uint j = 2 * index % pc.width;
        const vec2 gate = vec2(a[t * 2 * pc.width + j], a[t * 2 * pc.width + j + 1]);
        const vec2 up = vec2(a[t * 2 * pc.width + pc.width + j], a[t * 2 * pc.width + pc.width + j + 1]);
        const vec2 value = gate / (1.0 + exp(-gate)) * up;
        b[2 * index] = value.x;
        b[2 * index + 1] = value.y;
        half_copy[index] = packHalf2x16(value);
    }
    return;
#endif
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
}
