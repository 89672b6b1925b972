#version 450
#extension GL_GOOGLE_include_directive : require
// Prefill product out[t, r] = Σ_c x[t, c] · W[r, c] for many tokens, W quantized (BITS-bit affine
// groups), in Float32 on any device. A workgroup computes a TILE_TOKENS × TILE_ROWS tile of out: each
// step it stages TILE_K columns of x and of dequantized W in shared memory (transposed, so an
// invocation reads its values as vec4s), and each invocation accumulates a THREAD_TOKENS ×
// THREAD_ROWS block in registers. Its tokens are 4·(THREADS_T·c + tt) + i and its rows
// 4·(THREADS_R·c + tr) + j, so neighbouring invocations read neighbouring vec4s and write
// neighbouring outputs. Shared memory: 4 · TILE_K · (TILE_TOKENS + TILE_ROWS) bytes.
// Any tokens and rows; columns a multiple of 32 / BITS (whole packed words).

#define THREADS_T (TILE_TOKENS / THREAD_TOKENS) // invocations along tokens
#define THREADS_R (TILE_ROWS / THREAD_ROWS)     // invocations along rows
#define THREADS (THREADS_T * THREADS_R)
layout(local_size_x = THREADS) in;

#include "prefill.glsl"

shared vec4 x_tile[TILE_K * TILE_TOKENS / 4]; // (TILE_K, TILE_TOKENS) Float32: x transposed
shared vec4 w_tile[TILE_K * TILE_ROWS / 4];   // (TILE_K, TILE_ROWS) Float32: dequantized W transposed

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint tr = tid % THREADS_R;
    const uint tt = tid / THREADS_R;
    const uint row0 = gl_WorkGroupID.x * TILE_ROWS;
    const uint token0 = gl_WorkGroupID.y * TILE_TOKENS;

    vec4 sums[THREAD_TOKENS][THREAD_ROWS / 4]; // (token i, rows 4c ..< 4c + 4) of this invocation's block
    for (uint i = 0; i < THREAD_TOKENS; ++i) {
        for (uint c = 0; c < THREAD_ROWS / 4; ++c) {
            sums[i][c] = vec4(0.0);
        }
    }
    StagedWord words[WORD_LOADS];
    vec4 xs[X_LOADS];
    const ColumnShare share = column_share();
    const uint k_begin = share.k_begin, k_end = share.k_end, y_offset = share.y_offset;
    stage_tiles(tid, row0, token0, k_begin, words, xs);
    for (uint k0 = k_begin; k0 < k_end; k0 += TILE_K) {
        for (uint i = 0; i < WORD_LOADS; ++i) {
            const uint index = tid + i * THREADS;
            const uint r = index / WORDS_PER_TILE_ROW;
            const uint k = (index % WORDS_PER_TILE_ROW) * VALUES_PER_WORD;
            for (uint j = 0; j < VALUES_PER_WORD; ++j) {
                w_tile[(k + j) * (TILE_ROWS / 4) + r / 4][r % 4] = dequantized(words[i], j);
            }
        }
        for (uint i = 0; i < X_LOADS; ++i) {
            const uint index = tid + i * THREADS;
            const uint t = index / (TILE_K / 4);
            const uint k = (index % (TILE_K / 4)) * 4;
            for (uint j = 0; j < 4; ++j) {
                x_tile[(k + j) * (TILE_TOKENS / 4) + t / 4][t % 4] = xs[i][j];
            }
        }
        barrier();
        if (k0 + TILE_K < k_end) {
            stage_tiles(tid, row0, token0, k0 + TILE_K, words, xs); // in flight while this step computes
        }
        for (uint k = 0; k < TILE_K; ++k) {
            vec4 a[THREAD_TOKENS / 4];
            vec4 b[THREAD_ROWS / 4];
            for (uint c = 0; c < THREAD_TOKENS / 4; ++c) {
                a[c] = x_tile[k * (TILE_TOKENS / 4) + c * THREADS_T + tt];
            }
            for (uint c = 0; c < THREAD_ROWS / 4; ++c) {
                b[c] = w_tile[k * (TILE_ROWS / 4) + c * THREADS_R + tr];
            }
            for (uint i = 0; i < THREAD_TOKENS; ++i) {
                for (uint c = 0; c < THREAD_ROWS / 4; ++c) {
                    sums[i][c] = fma(vec4(a[i / 4][i % 4]), b[c], sums[i][c]);
                }
            }
        }
        barrier();
    }

    for (uint i = 0; i < THREAD_TOKENS; ++i) {
        const uint token = token0 + 4 * ((i / 4) * THREADS_T + tt) + i % 4;
        if (token >= pc.tokens) {
            continue;
        }
        for (uint c = 0; c < THREAD_ROWS / 4; ++c) {
            const uint row = row0 + 4 * (c * THREADS_R + tr);
            for (uint j = 0; j < 4; ++j) {
                if (row + j < pc.rows) {
                    y[y_offset + token * pc.output_stride + row + j] = sums[i][c][j];
                }
            }
        }
    }
}
