#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
// Prefill product out[t, r] = Σ_c x[t, c] · W[r, c] on NV cooperative matrices: Float16 inputs
// (x converted and W dequantized to Float16 while staging in shared memory), Float32 sums.
// Uses 16×16×16 Float16 → Float32 products, the shape NVIDIA's drivers offer on every GPU with
// VK_NV_cooperative_matrix (not queried), and 32-invocation subgroups (the Swift side checks the
// device's subgroup size). A workgroup of WARPS_T × WARPS_R subgroups computes a TILE_TOKENS ×
// TILE_ROWS tile of out; each subgroup holds a WARP_TOKENS × WARP_ROWS block of it as 16×16
// accumulators. Results go out through a per-subgroup 16×16 block of shared memory, so edges are
// written with bounds checks. Any tokens and rows; columns a multiple of 32 / BITS.

#define SUBGROUP 32
#define WARPS_T (TILE_TOKENS / WARP_TOKENS)
#define WARPS_R (TILE_ROWS / WARP_ROWS)
#define THREADS (WARPS_T * WARPS_R * SUBGROUP)
#define BLOCKS_T (WARP_TOKENS / 16) // accumulators along tokens per subgroup
#define BLOCKS_R (WARP_ROWS / 16)   // accumulators along rows per subgroup
// Float16s between rows of the shared tiles: padded against bank conflicts, a multiple of 8
// (16 bytes, the alignment cooperative-matrix loads need).
#define STRIDE (TILE_K + 8)
layout(local_size_x = THREADS) in;

#include "prefill.glsl"

shared float16_t x_tile[TILE_TOKENS * STRIDE];   // (TILE_TOKENS, STRIDE) Float16: x
shared float16_t w_tile[TILE_ROWS * STRIDE];     // (TILE_ROWS, STRIDE) Float16: dequantized W
shared float out_blocks[WARPS_T * WARPS_R * 256]; // (subgroups, 16, 16) Float32: results on their way out

#define Accumulator fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define Operand fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint warp = gl_SubgroupID;
    const uint lane = gl_SubgroupInvocationID;
    const uint warp_t = warp / WARPS_R;
    const uint warp_r = warp % WARPS_R;
    const uint row0 = gl_WorkGroupID.x * TILE_ROWS;
    const uint token0 = gl_WorkGroupID.y * TILE_TOKENS;

    Accumulator sums[BLOCKS_T][BLOCKS_R]; // (tokens, rows) 16×16 blocks of this subgroup's part of the tile
    for (uint i = 0; i < BLOCKS_T; ++i) {
        for (uint j = 0; j < BLOCKS_R; ++j) {
            sums[i][j] = Accumulator(0.0);
        }
    }
    StagedWord words[WORD_LOADS];
    vec4 xs[X_LOADS];
    stage_tiles(tid, row0, token0, 0, words, xs);
    for (uint k0 = 0; k0 < pc.columns; k0 += TILE_K) {
        for (uint i = 0; i < WORD_LOADS; ++i) {
            const uint index = tid + i * THREADS;
            const uint base = (index / WORDS_PER_TILE_ROW) * STRIDE + (index % WORDS_PER_TILE_ROW) * VALUES_PER_WORD;
            for (uint j = 0; j < VALUES_PER_WORD; ++j) {
                w_tile[base + j] = float16_t(dequantized(words[i], j));
            }
        }
        for (uint i = 0; i < X_LOADS; ++i) {
            const uint index = tid + i * THREADS;
            const uint base = (index / (TILE_K / 4)) * STRIDE + (index % (TILE_K / 4)) * 4;
            const f16vec4 values = f16vec4(xs[i]);
            for (uint j = 0; j < 4; ++j) {
                x_tile[base + j] = values[j];
            }
        }
        barrier();
        if (k0 + TILE_K < pc.columns) {
            stage_tiles(tid, row0, token0, k0 + TILE_K, words, xs); // in flight while this step computes
        }
        for (uint k = 0; k < TILE_K; k += 16) {
            Operand a[BLOCKS_T]; // (16 tokens, 16 columns) of x, row-major
            Operand b[BLOCKS_R]; // (16 columns, 16 rows) of Wᵀ: W's rows read column-major
            for (uint i = 0; i < BLOCKS_T; ++i) {
                coopMatLoadNV(a[i], x_tile, (warp_t * WARP_TOKENS + 16 * i) * STRIDE + k, STRIDE, false);
            }
            for (uint j = 0; j < BLOCKS_R; ++j) {
                coopMatLoadNV(b[j], w_tile, (warp_r * WARP_ROWS + 16 * j) * STRIDE + k, STRIDE, true);
            }
            for (uint i = 0; i < BLOCKS_T; ++i) {
                for (uint j = 0; j < BLOCKS_R; ++j) {
                    sums[i][j] = coopMatMulAddNV(a[i], b[j], sums[i][j]);
                }
            }
        }
        barrier();
    }

    const uint block = warp * 256;
    for (uint i = 0; i < BLOCKS_T; ++i) {
        for (uint j = 0; j < BLOCKS_R; ++j) {
            coopMatStoreNV(sums[i][j], out_blocks, block, 16, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            const uint first_token = token0 + warp_t * WARP_TOKENS + 16 * i;
            const uint first_row = row0 + warp_r * WARP_ROWS + 16 * j;
            for (uint e = lane; e < 256; e += SUBGROUP) {
                const uint token = first_token + e / 16;
                const uint row = first_row + e % 16;
                if (token < pc.tokens && row < pc.rows) {
                    y[token * pc.output_stride + row] = out_blocks[block + e];
                }
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
        }
    }
}
