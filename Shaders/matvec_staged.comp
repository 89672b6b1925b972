#version 450
#extension GL_GOOGLE_include_directive : require
// Decode product y[r] = Σ_c W[r, c] · x[c] for one token, W quantized (BITS-bit affine groups),
// with x staged in shared memory. The plain matvec.comp lets every lane read its own 128-byte run
// of x from global memory, 32 cache lines per warp-wide load; here the workgroup first copies x
// (in chunks of CHUNK columns) with coalesced loads into shared memory, padded by one vec4 per
// block so that lanes reading neighbouring blocks hit distinct banks, together with each block's
// Σ x for the affine bias term. Each subgroup then computes ROWS rows, every lane streaming
// 16-byte blocks of packed weights.
// Values are unpacked with one shift per word: (word & mask) | 0x4B000000 read as a float is 2^23
// plus the value times 2^e, exact while the masked bits stay below bit 23, so the staged x is
// pre-multiplied by 2^-e, e being where the value's bits sit (the top positions are taken from
// word >> 12 for 4 bits, word >> 16 for 8 bits).
// With ACCUMULATE the result is also added into `accumulator` (the residual add fused).
// Needs columns a multiple of BLOCK_VALUES and group_size a multiple of BLOCK_VALUES.
#include "common.glsl"
#include "quantized.glsl"

#ifndef ROWS
#define ROWS 4
#endif
#ifndef UNROLL
#define UNROLL 2 // blocks per row loaded before any is used
#endif
#ifndef CHUNK
#define CHUNK 4096 // columns of x staged at a time
#endif
#define BLOCK_VALUES (4 * VALUES_PER_WORD)  // values in one 16-byte block: 32 (4-bit) or 16 (8-bit)
#define BLOCK_VEC4 (BLOCK_VALUES / 4)        // vec4s of x per block
#define PADDED_VEC4 (BLOCK_VEC4 + 1)
#define CHUNK_BLOCKS (CHUNK / BLOCK_VALUES)

#include "matvec_io.glsl"

shared vec4 staged[CHUNK_BLOCKS * PADDED_VEC4]; // (chunk blocks, BLOCK_VEC4 + 1 padding) x · 2^-e
shared float block_sums[CHUNK_BLOCKS];          // (chunk blocks) Σ x over each block

#define MAGIC 0x4B000000u
#define UNPACK(w, m) (uintBitsToFloat(((w) & (m)) | MAGIC) - 8388608.0)

// The factors 2^-e for the four values of vec4 number i of a block (see block_dot).
vec4 position_scale(uint i) {
#if BITS == 4
    return (i & 1u) == 0u ? vec4(1.0, 1.0 / 16.0, 1.0 / 256.0, 1.0 / 4096.0)
                          : vec4(1.0 / 65536.0, 1.0 / 256.0, 1.0 / 4096.0, 1.0 / 65536.0);
#else
    return vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
#endif
}

// Σ over one 16-byte block of q · x, with the block's staged x starting at staged[base].
float block_dot(uvec4 block, uint base) {
    float total = 0.0;
    for (uint j = 0; j < 4; ++j) {
        const uint w = block[j];
#if BITS == 4
        const uint h = w >> 12;  // positions 5-7 at bits 8-19
        const vec4 low = vec4(UNPACK(w, 0xFu), UNPACK(w, 0xF0u), UNPACK(w, 0xF00u), UNPACK(w, 0xF000u));
        const vec4 high = vec4(UNPACK(w, 0xF0000u), UNPACK(h, 0xF00u), UNPACK(h, 0xF000u), UNPACK(h, 0xF0000u));
        total += dot(low, staged[base + 2 * j]) + dot(high, staged[base + 2 * j + 1]);
#else
        const uint h = w >> 16;  // bytes 2-3 at bits 0-15
        const vec4 q = vec4(UNPACK(w, 0xFFu), UNPACK(w, 0xFF00u), UNPACK(h, 0xFFu), UNPACK(h, 0xFF00u));
        total += dot(q, staged[base + j]);
#endif
    }
    return total;
}

void main() {
    const uint first_row = (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * ROWS;
    const uint blocks_per_row = pc.columns / BLOCK_VALUES;
    const uint groups_per_row = pc.columns / pc.group_size;
    const uint blocks_per_group = pc.group_size / BLOCK_VALUES;
    const uint x_base = pc.input_row * (pc.columns / 4);  // in vec4s
    float sums[ROWS];
    for (uint r = 0; r < ROWS; ++r) {
        sums[r] = 0.0;
    }
    for (uint chunk = 0; chunk < blocks_per_row; chunk += CHUNK_BLOCKS) {
        const uint chunk_blocks = min(uint(CHUNK_BLOCKS), blocks_per_row - chunk);
        barrier();  // the previous chunk is no longer read
        for (uint v = gl_LocalInvocationIndex; v < chunk_blocks * BLOCK_VEC4; v += gl_WorkGroupSize.x) {
            const uint b = v / BLOCK_VEC4, i = v % BLOCK_VEC4;
            staged[b * PADDED_VEC4 + i] = x[x_base + chunk * BLOCK_VEC4 + v] * position_scale(i);
        }
        for (uint b = gl_LocalInvocationIndex; b < chunk_blocks; b += gl_WorkGroupSize.x) {
            vec4 s = vec4(0.0);
            for (uint i = 0; i < BLOCK_VEC4; ++i) {
                s += x[x_base + (chunk + b) * BLOCK_VEC4 + i];
            }
            block_sums[b] = s.x + s.y + s.z + s.w;
        }
        barrier();
        if (first_row >= pc.rows) {
            continue;  // no rows here, but the barriers above still need this subgroup
        }
        for (uint k0 = gl_SubgroupInvocationID; k0 < chunk_blocks; k0 += UNROLL * gl_SubgroupSize) {
            uvec4 blocks[UNROLL][ROWS];
            for (uint u = 0; u < UNROLL; ++u) {
                const uint k = k0 + u * gl_SubgroupSize;
                for (uint r = 0; r < ROWS; ++r) {
                    blocks[u][r] = k < chunk_blocks && first_row + r < pc.rows
                                 ? packed[(first_row + r) * blocks_per_row + chunk + k] : uvec4(0);
                }
            }
            for (uint u = 0; u < UNROLL; ++u) {
                const uint k = k0 + u * gl_SubgroupSize;
                if (k >= chunk_blocks) {
                    continue;
                }
                const uint group = (chunk + k) / blocks_per_group;
                const float x_sum = block_sums[k];
                for (uint r = 0; r < ROWS && first_row + r < pc.rows; ++r) {
                    const uint g = (first_row + r) * groups_per_row + group;
                    sums[r] += HALF_AT(scales, g) * block_dot(blocks[u][r], k * PADDED_VEC4) + HALF_AT(biases, g) * x_sum;
                }
            }
        }
    }
    if (first_row >= pc.rows) {
        return;
    }
    for (uint r = 0; r < ROWS; ++r) {
        const float total = subgroupAdd(sums[r]);
        if (subgroupElect() && first_row + r < pc.rows) {
            y[first_row + r] = total;
#ifdef ACCUMULATE
            accumulator[first_row + r] += total;
#endif
        }
    }
}
