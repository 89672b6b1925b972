#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Decode product y[r] = Σ_c W[r, c] · x[c] for one token, W quantized (BITS-bit affine groups),
// with x staged in shared memory.
// Each workgroup first copies x (CHUNK columns at a time) into shared memory, padded by one vec4
// per block so that lanes reading neighbouring blocks hit distinct banks, together with each
// block's Σ x for the affine bias term. Each subgroup then computes ROWS rows: every lane loads
// UNROLL 16-byte blocks of each row (all loads issued before any is used), reads the block's x
// from shared memory once into registers and uses it for all ROWS rows.
// Values are unpacked with one AND-OR per value: (word & mask) | 0x4B000000 read as a float is
// 2^23 plus the value times 2^e, exact while the masked bits stay below bit 23, so the staged x is
// pre-multiplied by 2^-e, e being where the value's bits sit (the top positions are taken from
// word >> 12 for 4 bits, word >> 16 for 8 bits).
// Prologues fuse the operation that produced x into the staging, so that it needs no dispatch of
// its own (workgroup 0 also writes the x it computed, so the result is the same as unfused):
//   PROLOGUE_NORM: x = RMSNorm(input row) · norm_weight (needs columns <= CHUNK)
//   PROLOGUE_SILU: x = silu(gate) · up, the input row being gate | up (2 · columns values)
// With ACCUMULATE the result is also added into `accumulator` (the residual add fused).
// Needs columns a multiple of BLOCK_VALUES and group_size a multiple of BLOCK_VALUES.
#include "common.glsl"
#include "quantized.glsl"

layout(constant_id = 1) const uint ROWS = 4;    // rows per subgroup
layout(constant_id = 2) const uint UNROLL = 2;  // blocks per row and lane loaded before any is used
#ifndef CHUNK
#define CHUNK 4096 // columns of x staged at a time
#endif
#define BLOCK_VALUES (4 * VALUES_PER_WORD)  // values in one 16-byte block: 32 (4-bit) or 16 (8-bit)
#define BLOCK_VEC4 (BLOCK_VALUES / 4)        // vec4s of x per block
#define PADDED_VEC4 (BLOCK_VEC4 + 1)
#define CHUNK_BLOCKS (CHUNK / BLOCK_VALUES)

#include "matvec_io.glsl"

#if defined(PROLOGUE_NORM) || defined(PROLOGUE_SILU)
layout(std430, binding = 6) readonly buffer NormWeight { vec4 norm_weight[]; };     // (columns) Float32, PROLOGUE_NORM
layout(std430, binding = 7) writeonly buffer PrologueOutput { vec4 prologue_out[]; }; // (tokens, columns) x as computed
#endif

shared vec4 staged[CHUNK_BLOCKS * PADDED_VEC4]; // (chunk blocks, BLOCK_VEC4 + 1 padding) x · 2^-e
shared float block_sums[CHUNK_BLOCKS];          // (chunk blocks) Σ x over each block
shared float subgroup_sums[64];                 // (subgroups) for the RMSNorm reduction

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

// Σ over one 16-byte block of q · x, x being the block's staged values.
float block_dot(uvec4 block, vec4 xs[BLOCK_VEC4]) {
    float total = 0.0;
    [[unroll]] for (uint j = 0; j < 4; ++j) {
        const uint w = block[j];
#if BITS == 4
        const uint h = w >> 12;  // positions 5-7 at bits 8-19
        const vec4 low = vec4(UNPACK(w, 0xFu), UNPACK(w, 0xF0u), UNPACK(w, 0xF00u), UNPACK(w, 0xF000u));
        const vec4 high = vec4(UNPACK(w, 0xF0000u), UNPACK(h, 0xF00u), UNPACK(h, 0xF000u), UNPACK(h, 0xF0000u));
        total += dot(low, xs[2 * j]) + dot(high, xs[2 * j + 1]);
#else
        const uint h = w >> 16;  // bytes 2-3 at bits 0-15
        const vec4 q = vec4(UNPACK(w, 0xFFu), UNPACK(w, 0xFF00u), UNPACK(h, 0xFFu), UNPACK(h, 0xFF00u));
        total += dot(q, xs[j]);
#endif
    }
    return total;
}

// Σ of `value` over the workgroup (every invocation must call it).
float workgroup_total(float value) {
    const float partial = subgroupAdd(value);
    if (subgroupElect()) {
        subgroup_sums[gl_SubgroupID] = partial;
    }
    barrier();
    float total = 0.0;
    for (uint s = 0; s < gl_NumSubgroups; ++s) {
        total += subgroup_sums[s];
    }
    return total;
}

void main() {
    const uint first_row = (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * ROWS;
    const uint blocks_per_row = pc.columns / BLOCK_VALUES;
    const uint groups_per_row = pc.columns / pc.group_size;
    const uint blocks_per_group = pc.group_size / BLOCK_VALUES;
    const uint columns4 = pc.columns / 4;
#ifdef PROLOGUE_SILU
    const uint x_base = pc.input_row * 2 * columns4;  // in vec4s: gate at x_base, up at x_base + columns4
#else
    const uint x_base = pc.input_row * columns4;      // in vec4s
#endif
    const bool writes_prologue = gl_WorkGroupID.x == 0;
#ifdef PROLOGUE_NORM
    float squares = 0.0;
    for (uint v = gl_LocalInvocationIndex; v < columns4; v += gl_WorkGroupSize.x) {
        const vec4 value = x[x_base + v];
        squares += dot(value, value);
    }
    const float norm_scale = inversesqrt(workgroup_total(squares) / float(pc.columns) + pc.epsilon);
#endif
    float sums[ROWS];
    [[unroll]] for (uint r = 0; r < ROWS; ++r) {
        sums[r] = 0.0;
    }
    for (uint chunk = 0; chunk < blocks_per_row; chunk += CHUNK_BLOCKS) {
        const uint chunk_blocks = min(uint(CHUNK_BLOCKS), blocks_per_row - chunk);
        barrier();  // the previous chunk is no longer read
        // One block per invocation: its x (after the prologue), scaled, and its Σ x.
        for (uint b = gl_LocalInvocationIndex; b < chunk_blocks; b += gl_WorkGroupSize.x) {
            float block_sum = 0.0;
            [[unroll]] for (uint i = 0; i < BLOCK_VEC4; ++i) {
                const uint v = (chunk + b) * BLOCK_VEC4 + i;  // vec4 number within the row
#if defined(PROLOGUE_NORM)
                const vec4 value = x[x_base + v] * norm_scale * norm_weight[v];
#elif defined(PROLOGUE_SILU)
                const vec4 gate = x[x_base + v];
                const vec4 value = gate / (1.0 + exp(-gate)) * x[x_base + columns4 + v];
#else
                const vec4 value = x[x_base + v];
#endif
#if defined(PROLOGUE_NORM) || defined(PROLOGUE_SILU)
                if (writes_prologue) {
                    prologue_out[pc.input_row * columns4 + v] = value;
                }
#endif
                block_sum += value.x + value.y + value.z + value.w;
                staged[b * PADDED_VEC4 + i] = value * position_scale(i);
            }
            block_sums[b] = block_sum;
        }
        barrier();
        for (uint k0 = gl_SubgroupInvocationID; k0 < chunk_blocks; k0 += UNROLL * gl_SubgroupSize) {
            uvec4 blocks[UNROLL][ROWS];
            vec2 factors[UNROLL][ROWS];  // (scale, bias) of the block's group
            [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
                const uint k = min(k0 + u * gl_SubgroupSize, chunk_blocks - 1);  // past the end: loaded, not used
                const uint group = (chunk + k) / blocks_per_group;
                [[unroll]] for (uint r = 0; r < ROWS; ++r) {
                    const uint row = min(first_row + r, pc.rows - 1);  // past the last row: computed, not written
                    blocks[u][r] = packed[row * blocks_per_row + chunk + k];
                    const uint g = row * groups_per_row + group;
                    factors[u][r] = vec2(HALF_AT(scales, g), HALF_AT(biases, g));
                }
            }
            [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
                const uint k = k0 + u * gl_SubgroupSize;
                if (k < chunk_blocks) {
                    vec4 xs[BLOCK_VEC4];
                    [[unroll]] for (uint i = 0; i < BLOCK_VEC4; ++i) {
                        xs[i] = staged[k * PADDED_VEC4 + i];
                    }
                    const float x_sum = block_sums[k];
                    [[unroll]] for (uint r = 0; r < ROWS; ++r) {
                        sums[r] += factors[u][r].x * block_dot(blocks[u][r], xs) + factors[u][r].y * x_sum;
                    }
                }
            }
        }
    }
    [[unroll]] for (uint r = 0; r < ROWS; ++r) {
        const float total = subgroupAdd(sums[r]);
        if (subgroupElect() && first_row + r < pc.rows) {
            y[first_row + r] = total;
#ifdef ACCUMULATE
            accumulator[first_row + r] += total;
#endif
        }
    }
}
