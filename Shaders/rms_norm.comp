#version 450
#extension GL_GOOGLE_include_directive : require
// RMSNorm of each row: y = x / sqrt(mean(x²) + epsilon) · weight. One workgroup per row.
// With HALF_COPY y is also written as Float16 pairs (columns even), as elementwise.comp's
// OPERATION_TO_HALF would convert it, for a prompt's cooperative-matrix product to read.
#include "common.glsl"
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Input { float x[]; };       // (rows, columns)
layout(std430, binding = 1) readonly buffer Weight { float weight[]; }; // (columns)
layout(std430, binding = 2) writeonly buffer Output { float y[]; };     // (rows, columns)
#ifdef HALF_COPY
layout(std430, binding = 3) writeonly buffer HalfCopy { uint half_copy[]; }; // (rows, columns / 2) Float16 pairs of y
#endif

layout(push_constant) uniform RMSNormConstants {
    uint columns;
    uint rows;
    float epsilon;
} pc;

void main() {
    const uint row = gl_WorkGroupID.x;
    if (row >= pc.rows) {
        return;
    }
    const uint base = row * pc.columns;
    float sum_of_squares = 0.0;
    for (uint c = gl_LocalInvocationID.x; c < pc.columns; c += gl_WorkGroupSize.x) {
        const float v = x[base + c];
        sum_of_squares += v * v;
    }
    const float total = workgroup_sum(sum_of_squares);
    const float scale = inversesqrt(total / float(pc.columns) + pc.epsilon);
#ifdef HALF_COPY
    for (uint c = 2 * gl_LocalInvocationID.x; c < pc.columns; c += 2 * gl_WorkGroupSize.x) {
        const vec2 value = vec2(x[base + c], x[base + c + 1]) * scale * vec2(weight[c], weight[c + 1]);
        y[base + c] = value.x;
        y[base + c + 1] = value.y;
        half_copy[(base + c) / 2] = packHalf2x16(value);
    }
#else
    for (uint c = gl_LocalInvocationID.x; c < pc.columns; c += gl_WorkGroupSize.x) {
        y[base + c] = x[base + c] * scale * weight[c];
    }
#endif
}
