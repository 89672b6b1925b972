#version 450
#extension GL_GOOGLE_include_directive : require
// Reads a buffer once as fast as the device can (16-byte loads, grid-stride), to measure the
// read bandwidth that `phi-gpu bench kernels` compares the kernels with. Writes one word per
// workgroup so the reads cannot be optimised away.
#include "common.glsl"
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Source { uvec4 source[]; }; // (count) 16-byte words
layout(std430, binding = 1) writeonly buffer Sink { float sink[]; };    // (workgroups)

layout(push_constant) uniform StreamReadConstants {
    uint count;
} pc;

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uvec4 acc = uvec4(0);
    for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += 4 * stride) {
        const uvec4 a = source[i];
        const uvec4 b = i + stride < pc.count ? source[i + stride] : uvec4(0);
        const uvec4 c = i + 2 * stride < pc.count ? source[i + 2 * stride] : uvec4(0);
        const uvec4 d = i + 3 * stride < pc.count ? source[i + 3 * stride] : uvec4(0);
        acc ^= a ^ b ^ c ^ d;
    }
    const float total = workgroup_sum(float(acc.x ^ acc.y ^ acc.z ^ acc.w));
    if (gl_LocalInvocationID.x == 0) {
        sink[gl_WorkGroupID.x] = total;
    }
}
