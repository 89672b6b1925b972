#version 450
#extension GL_GOOGLE_include_directive : require
// out[t, r] = Σ_c x[t, c] · W[r, c], W quantized (BITS-bit affine groups). One subgroup per output
// row, TOKENS tokens at a time; lanes stride over the row's packed words, then a subgroup sum.
#include "common.glsl"
#include "quantized.glsl"

#ifndef TOKENS
#define TOKENS 1
#endif

layout(std430, binding = 0) readonly buffer Input { vec4 x[]; };       // (tokens, columns) Float32
layout(std430, binding = 1) readonly buffer Packed { uint packed[]; }; // (rows, columns · BITS / 32)
layout(std430, binding = 2) readonly buffer Scales { uint scales[]; }; // (rows, columns / group) Float16 pairs
layout(std430, binding = 3) readonly buffer Biases { uint biases[]; }; // (rows, columns / group) Float16 pairs
layout(std430, binding = 4) writeonly buffer Output { float y[]; };    // (tokens, outputStride)

layout(push_constant) uniform MatmulConstants {
    uint rows;          // output features
    uint columns;       // input features
    uint tokens;        // rows of x to multiply
    uint input_row;     // first row of x used
    uint group_size;
    uint output_stride; // floats between output rows (≥ rows)
} pc;

void main() {
    const uint row = gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID;
    const uint token_base = gl_WorkGroupID.y * TOKENS;
    if (row >= pc.rows) {
        return;
    }
    const uint words_per_row = pc.columns / VALUES_PER_WORD;
    const uint groups_per_row = pc.columns / pc.group_size;
    const uint vec4s_per_row = pc.columns / 4;
    float sums[TOKENS];
    for (uint t = 0; t < TOKENS; ++t) {
        sums[t] = 0.0;
    }
    for (uint k = gl_SubgroupInvocationID; k < words_per_row; k += gl_SubgroupSize) {
        const uint word = packed[row * words_per_row + k];
        const uint column = k * VALUES_PER_WORD;
        const uint group = row * groups_per_row + column / pc.group_size;
        const float scale = HALF_AT(scales, group);
        const float bias = HALF_AT(biases, group);
        // The word's values as vec4s, and the matching slices of each token's x.
        vec4 q[VALUES_PER_WORD / 4];
        for (uint i = 0; i < VALUES_PER_WORD / 4; ++i) {
            q[i] = vec4(float((word >> (BITS * (4 * i + 0))) & VALUE_MASK), float((word >> (BITS * (4 * i + 1))) & VALUE_MASK),
                        float((word >> (BITS * (4 * i + 2))) & VALUE_MASK), float((word >> (BITS * (4 * i + 3))) & VALUE_MASK));
        }
        for (uint t = 0; t < TOKENS; ++t) {
            const uint token = token_base + t;
            if (token < pc.tokens) {
                const uint base = (pc.input_row + token) * vec4s_per_row + column / 4;
                float dot_q = 0.0;
                float sum_x = 0.0;
                for (uint i = 0; i < VALUES_PER_WORD / 4; ++i) {
                    const vec4 xv = x[base + i];
                    dot_q += dot(q[i], xv);
                    sum_x += dot(vec4(1.0), xv);
                }
                sums[t] += scale * dot_q + bias * sum_x;
            }
        }
    }
    for (uint t = 0; t < TOKENS; ++t) {
        const float total = subgroupAdd(sums[t]);
        const uint token = token_base + t;
        if (subgroupElect() && token < pc.tokens) {
            y[token * pc.output_stride + row] = total;
        }
    }
}
