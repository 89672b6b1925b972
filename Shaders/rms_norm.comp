#version 450
#extension GL_GOOGLE_include_directive : require
// RMSNorm of each row: y = x / sqrt(mean(x²) + epsilon) · weight. One workgroup per row.
#include "common.glsl"
#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Input { float x[]; };       // (rows, columns)
layout(std430, binding = 1) readonly buffer Weight { float weight[]; }; // (columns)
layout(std430, binding = 2) writeonly buffer Output { float y[]; };     // (rows, columns)

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
    for (uint c = gl_LocalInvocationID.x; c < pc.columns; c += gl_WorkGroupSize.x) {
        y[base + c] = x[base + c] * scale * weight[c];
    }
}
