#version 450
#extension GL_GOOGLE_include_directive : require
// Decode product y[r] = Σ_c W[r, c] · x[c] for a few tokens (TOKENS), W quantized (BITS-bit affine
// groups). Each subgroup computes ROWS consecutive rows; each lane walks the columns in 16-byte
// blocks of packed weights, loading a block of x once and using it for all ROWS rows, so weight
// loads dominate and several are in flight per lane. With ACCUMULATE the result is also added into
// `accumulator` (the residual add fused into the product).
// Needs columns to be a multiple of 128 / BITS (whole 16-byte blocks per row).
#include "common.glsl"
#include "quantized.glsl"

#ifndef ROWS
#define ROWS 4
#endif
#ifndef TOKENS
#define TOKENS 1
#endif
#ifndef UNROLL
#define UNROLL 4 // blocks per row loaded before any is used, so several loads are in flight
#endif
#define BLOCK_VALUES (4 * VALUES_PER_WORD) // values in one 16-byte block

#include "matvec_io.glsl"

// A small unsigned integer as a float without an integer conversion: 2^23 + v has v in its low
// mantissa bits, so OR-ing v into 2^23's bits and subtracting 2^23 gives v exactly.
#define AS_FLOAT(v) (uintBitsToFloat(0x4B000000u | (v)) - 8388608.0)

// Σ over one word's values of q · x, with x given as VALUES_PER_WORD / 4 vec4s starting at xs[first].
float word_dot(uint word, vec4 xs[BLOCK_VALUES / 4], uint first) {
    float total = 0.0;
    for (uint i = 0; i < VALUES_PER_WORD / 4; ++i) {
        const vec4 q = vec4(AS_FLOAT((word >> (BITS * (4 * i + 0))) & VALUE_MASK), AS_FLOAT((word >> (BITS * (4 * i + 1))) & VALUE_MASK),
                            AS_FLOAT((word >> (BITS * (4 * i + 2))) & VALUE_MASK), AS_FLOAT((word >> (BITS * (4 * i + 3))) & VALUE_MASK));
        total += dot(q, xs[first + i]);
    }
    return total;
}

void main() {
    const uint first_row = (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * ROWS;
    if (first_row >= pc.rows) {
        return;
    }
    const uint blocks_per_row = pc.columns / BLOCK_VALUES;
    const uint groups_per_row = pc.columns / pc.group_size;
    const bool block_in_one_group = pc.group_size >= BLOCK_VALUES;
    float sums[TOKENS][ROWS];
    for (uint t = 0; t < TOKENS; ++t) {
        for (uint r = 0; r < ROWS; ++r) {
            sums[t][r] = 0.0;
        }
    }
    for (uint k0 = gl_SubgroupInvocationID; k0 < blocks_per_row; k0 += UNROLL * gl_SubgroupSize) {
        uvec4 blocks[UNROLL][ROWS];
        for (uint u = 0; u < UNROLL; ++u) {
            const uint k = k0 + u * gl_SubgroupSize;
            for (uint r = 0; r < ROWS; ++r) {
                blocks[u][r] = k < blocks_per_row && first_row + r < pc.rows ? packed[(first_row + r) * blocks_per_row + k] : uvec4(0);
            }
        }
        for (uint u = 0; u < UNROLL; ++u) {
        const uint k = k0 + u * gl_SubgroupSize;
        const uint column = k * BLOCK_VALUES;
        for (uint t = 0; t < TOKENS; ++t) {
            if (k >= blocks_per_row || t >= pc.tokens) {
                continue;
            }
            vec4 xs[BLOCK_VALUES / 4];
            float x_sums[4];
            const uint base = (pc.input_row + t) * (pc.columns / 4) + column / 4;
            for (uint i = 0; i < BLOCK_VALUES / 4; ++i) {
                xs[i] = x[base + i];
            }
            for (uint w = 0; w < 4; ++w) {
                float s = 0.0;
                for (uint i = 0; i < VALUES_PER_WORD / 4; ++i) {
                    s += dot(vec4(1.0), xs[w * (VALUES_PER_WORD / 4) + i]);
                }
                x_sums[w] = s;
            }
            for (uint r = 0; r < ROWS; ++r) {
                const uint row_group = (first_row + r) * groups_per_row;
                const uvec4 block = blocks[u][r];
                if (block_in_one_group) {
                    const uint g = row_group + column / pc.group_size;
                    const float dots = word_dot(block.x, xs, 0) + word_dot(block.y, xs, VALUES_PER_WORD / 4)
                                     + word_dot(block.z, xs, 2 * (VALUES_PER_WORD / 4)) + word_dot(block.w, xs, 3 * (VALUES_PER_WORD / 4));
                    sums[t][r] += HALF_AT(scales, g) * dots + HALF_AT(biases, g) * (x_sums[0] + x_sums[1] + x_sums[2] + x_sums[3]);
                } else {
                    for (uint w = 0; w < 4; ++w) {
                        const uint g = row_group + (column + w * VALUES_PER_WORD) / pc.group_size;
                        sums[t][r] += HALF_AT(scales, g) * word_dot(block[w], xs, w * (VALUES_PER_WORD / 4))
                                    + HALF_AT(biases, g) * x_sums[w];
                    }
                }
            }
        }
        }
    }
    for (uint t = 0; t < TOKENS; ++t) {
        for (uint r = 0; r < ROWS; ++r) {
            const float total = subgroupAdd(sums[t][r]);
            if (subgroupElect() && first_row + r < pc.rows && t < pc.tokens) {
                const uint index = t * pc.output_stride + first_row + r;
                y[index] = total;
#ifdef ACCUMULATE
                accumulator[index] += total;
#endif
            }
        }
    }
}
