#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// RMSNorm of each row: y = x / sqrt(mean(x²) + epsilon) · weight. One workgroup per row.
// With HALF_COPY y is also written as Float16 pairs (columns a multiple of 4), as elementwise.comp's
// OPERATION_TO_HALF would convert it, for a prompt's cooperative-matrix product to read.
#include "common.glsl"
#include "reduce.glsl"

#ifdef HALF_COPY
// Columns a multiple of 8: every access 16 bytes wide (8 for the copy), a row's first CACHED vec4s
// per invocation kept in registers between the two passes.
layout(std430, binding = 0) readonly buffer Input { vec4 x[]; };             // (rows, columns / 4)
layout(std430, binding = 1) readonly buffer Weight { vec4 weight[]; };       // (columns / 4)
layout(std430, binding = 2) writeonly buffer Output { vec4 y[]; };           // (rows, columns / 4)
layout(std430, binding = 3) writeonly buffer HalfCopy { uvec2 half_copy[]; }; // (rows, columns / 4) 4 Float16 of y
#define CACHED 4
#else
layout(std430, binding = 0) readonly buffer Input { float x[]; };       // (rows, columns)
layout(std430, binding = 1) readonly buffer Weight { float weight[]; }; // (columns)
layout(std430, binding = 2) writeonly buffer Output { float y[]; };     // (rows, columns)
#endif

layout(push_constant) uniform RMSNormConstants {
    uint columns;
    uint rows;
    float epsilon;
} pc;

#ifdef HALF_COPY
// Writes vec4 c of the row at `base` (in vec4s) to y and its Float16 copy.
void store(uint base, uint c, vec4 value) {
    y[base + c] = value;
    half_copy[base + c] = uvec2(packHalf2x16(value.xy), packHalf2x16(value.zw));
}
#endif

void main() {
    const uint row = gl_WorkGroupID.x;
    if (row >= pc.rows) {
        return;
    }
#ifdef HALF_COPY
    const uint columns4 = pc.columns / 4;
    const uint base = row * columns4;
    const uint lane = gl_LocalInvocationID.x, width = gl_WorkGroupSize.x;
    vec4 cached[CACHED];
    float sum_of_squares = 0.0;
    [[unroll]] for (uint i = 0; i < CACHED; ++i) {
        const uint c = lane + i * width;
        cached[i] = c < columns4 ? x[base + c] : vec4(0.0);
        sum_of_squares += dot(cached[i], cached[i]);
    }
    for (uint c = lane + CACHED * width; c < columns4; c += width) {
        const vec4 v = x[base + c];
        sum_of_squares += dot(v, v);
    }
    const float total = workgroup_sum(sum_of_squares);
    const float scale = inversesqrt(total / float(pc.columns) + pc.epsilon);
    [[unroll]] for (uint i = 0; i < CACHED; ++i) {
        const uint c = lane + i * width;
        if (c < columns4) {
            store(base, c, cached[i] * scale * weight[c]);
        }
    }
    for (uint c = lane + CACHED * width; c < columns4; c += width) {
        store(base, c, x[base + c] * scale * weight[c]);
    }
#else
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
#endif
}
