#version 450
#extension GL_GOOGLE_include_directive : require
// Elementwise operations, one invocation per output element, chosen by OPERATION:
//   OPERATION_ADD:       a[i] += b[i]                                   (count · width elements)
//   OPERATION_SILU_GATE: out[t, j] = silu(a[t, j]) · a[t, width + j]    a: (count, 2 · width)
#include "common.glsl"

layout(std430, binding = 0) buffer First { float a[]; };
layout(std430, binding = 1) buffer Second { float b[]; };

layout(push_constant) uniform ElementwiseConstants {
    uint count; // rows
    uint width; // columns of the output
} pc;

void main() {
    const uint index = gl_GlobalInvocationID.x;
    if (index >= pc.count * pc.width) {
        return;
    }
#if defined(OPERATION_ADD)
    a[index] += b[index];
#elif defined(OPERATION_SILU_GATE)
    const uint t = index / pc.width;
    const uint j = index % pc.width;
    const float gate = a[t * 2 * pc.width + j];
    const float up = a[t * 2 * pc.width + pc.width + j];
    b[index] = gate / (1.0 + exp(-gate)) * up;
#else
#error OPERATION_ADD or OPERATION_SILU_GATE must be defined
#endif
}
