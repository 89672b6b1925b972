#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
// Prefill product out[t, r] = Σ_c x[t, c] · W[r, c] on NV cooperative matrices: Float16 inputs
// (x converted to Float16 beforehand by elementwise.comp's OPERATION_TO_HALF, W dequantized to
// Float16 while staging in shared memory), Float32 sums.
// Uses 16×16×16 Float16 → Float32 products, the shape NVIDIA's drivers offer on every GPU with
// VK_NV_cooperative_matrix (not queried), and 32-invocation subgroups (the Swift side checks the
// device's subgroup size). A workgroup of WARPS_T × WARPS_R subgroups computes a TILE_TOKENS ×
// TILE_ROWS tile of out; each subgroup holds a WARP_TOKENS × WARP_ROWS block of it as 16×16
// accumulators.
//
// Staging works in chunks of 8 columns, one uvec4 of 8 Float16 in shared memory: a chunk of W is
// one packed word at 4 bits (two at 8), dequantized two values at a time in Float16 arithmetic
// (each value q is made exact as the Float16 1024 + q, less 1024, then scale · q + bias in one
// fma, rounded once as before); a chunk of x is one uvec4 as it is in memory. (x in Float32,
// converted here, made every workgroup read twice the bytes from L2: that traffic, not the
// products, was most of the time.) Each invocation loads its chunks of
// the next step into registers while the subgroups multiply the current one. Whole 16×16 blocks
// of out are stored straight to memory; blocks on the edges go through shared memory with bounds
// checks. Any tokens and rows; columns a multiple of 8.
// A product may be split over its columns (split-K): workgroup z of PARTS takes the
// z-th of PARTS equal shares of the columns (a multiple of TILE_K and of the group size) and writes its
// partial sums to part z of y, (tokens, output_stride) floats each, for elementwise.comp's
// OPERATION_ADD_PARTS to add up. Products with few rows of tiles (o and down: 192 workgroups at
// 512 tokens, on an H200's 132 multiprocessors at 2 each) so fill the GPU.
// With STREAM_K (below) the workgroups share the last wave's steps (or all tiles') equally instead.

#define SUBGROUP 32
#define WARPS_T (TILE_TOKENS / WARP_TOKENS)
#define WARPS_R (TILE_ROWS / WARP_ROWS)
#define THREADS (WARPS_T * WARPS_R * SUBGROUP)
#define BLOCKS_T (WARP_TOKENS / 16)    // accumulators along tokens per subgroup
#define BLOCKS_R (WARP_ROWS / 16)      // accumulators along rows per subgroup
#define CHUNKS_PER_ROW (TILE_K / 8)    // uvec4s of 8 Float16 per tile row and step
#define STRIDE (CHUNKS_PER_ROW + 1)    // uvec4s between tile rows: padded by 16 bytes against bank conflicts
#define W_TILE_CHUNKS (TILE_ROWS * CHUNKS_PER_ROW)         // chunks of W a step stages
#define X_TILE_CHUNKS (TILE_TOKENS * CHUNKS_PER_ROW)       // chunks of x a step stages
#define W_CHUNKS ((W_TILE_CHUNKS + THREADS - 1) / THREADS)  // chunks of W each invocation stages per step (at most)
#define X_CHUNKS ((X_TILE_CHUNKS + THREADS - 1) / THREADS)  // chunks of x each invocation stages per step (at most)
// Whether invocation `tid`'s i-th chunk is part of the tile: always where the chunks divide
// evenly among the invocations (the check then folds away), else not for the last ones.
#define HAS_W_CHUNK(i) (W_CHUNKS * THREADS == W_TILE_CHUNKS || tid + (i) * THREADS < W_TILE_CHUNKS)
#define HAS_X_CHUNK(i) (X_CHUNKS * THREADS == X_TILE_CHUNKS || tid + (i) * THREADS < X_TILE_CHUNKS)
#define WORDS_PER_CHUNK (BITS / 4)
layout(local_size_x = THREADS) in;

#define X_F16
#include "prefill.glsl"

shared uvec4 x_tile[TILE_TOKENS * STRIDE];        // (TILE_TOKENS, TILE_K + 8) Float16: x
shared uvec4 w_tile[TILE_ROWS * STRIDE];          // (TILE_ROWS, TILE_K + 8) Float16: dequantized W
shared float out_blocks[WARPS_T * WARPS_R * 256]; // (subgroups, 16, 16) Float32: edge blocks on their way out

#define Accumulator fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define Operand fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>

// Chunk `chunk` (columns 8·chunk ..< 8·chunk + 8) of W's row `row`: its words, and its group's
// scale and bias when `new_group` (else those of the invocation's previous chunk, the same group);
// zeros outside W.
void load_w_chunk(uint row, uint chunk, bool new_group, out uvec2 words, inout f16vec2 scale_bias) {
    words = uvec2(0u);
    if (row >= pc.rows || chunk >= pc.columns / 8) {
        scale_bias = f16vec2(0.0hf);
        return;
    }
    const uint word = row * (pc.columns / VALUES_PER_WORD) + chunk * WORDS_PER_CHUNK;
    words.x = packed[word];
#if BITS == 8
    words.y = packed[word + 1];
#endif
    if (new_group) {
        const uint group = row * (pc.columns / pc.group_size) + chunk * 8 / pc.group_size;
        scale_bias = f16vec2(unpackFloat2x16(scales[group >> 1])[group & 1u], unpackFloat2x16(biases[group >> 1])[group & 1u]);
    }
}

// The 8 values of a chunk of W as Float16 pairs: scale · q + bias.
uvec4 dequantized_chunk(uvec2 words, f16vec2 scale_bias) {
    const f16vec2 scale = f16vec2(scale_bias.x), bias = f16vec2(scale_bias.y);
    uvec4 result;
    [[unroll]] for (uint i = 0; i < 4; ++i) {
#if BITS == 4
        const uint t = words.x >> (8 * i);  // values 2i, 2i + 1 in bits 0-3 and 4-7
        const uint q = (t & 0xFu) | ((t << 12) & 0xF0000u);
#else
        const uint t = words[i / 2] >> (16 * (i % 2));
        const uint q = (t & 0xFFu) | ((t << 8) & 0xFF0000u);
#endif
        const f16vec2 values = unpackFloat2x16(q | 0x64006400u) - f16vec2(1024.0hf);
        result[i] = packFloat2x16(fma(values, scale, bias));
    }
    return result;
}

// Adds to `sums` (the subgroup's 16×16 blocks of the tile, (tokens, rows)) the products of columns
// [k_begin, k_end) for the tile at (row0, token0).
void multiply_share(uint row0, uint token0, uint k_begin, uint k_end, inout Accumulator sums[BLOCKS_T][BLOCKS_R]) {
    const uint tid = gl_LocalInvocationID.x;
    const uint warp_t = gl_SubgroupID / WARPS_R;
    const uint warp_r = gl_SubgroupID % WARPS_R;
    uvec2 words[W_CHUNKS];       // this invocation's chunks of W for the next step
    f16vec2 scale_bias[W_CHUNKS]; // and their groups' scale and bias (an invocation's chunks keep their rows from step to step)
    uvec4 xs[X_CHUNKS];          // and of x
    Operand a[BLOCKS_T]; // (16 tokens, 16 columns) of x, row-major
    Operand b[BLOCKS_R]; // (16 columns, 16 rows) of Wᵀ: W's rows read column-major
    for (uint k0 = k_begin; k0 < k_end; k0 += TILE_K) {
        if (k0 == k_begin) {
            [[unroll]] for (uint i = 0; i < W_CHUNKS; ++i) {
                const uint index = tid + i * THREADS;
                if (HAS_W_CHUNK(i)) {
                    load_w_chunk(row0 + index / CHUNKS_PER_ROW, k0 / 8 + index % CHUNKS_PER_ROW, true, words[i], scale_bias[i]);
                }
            }
            [[unroll]] for (uint i = 0; i < X_CHUNKS; ++i) {
                const uint index = tid + i * THREADS;
                if (HAS_X_CHUNK(i)) {
                    xs[i] = load_x(token0 + index / CHUNKS_PER_ROW, k0 / 8 + index % CHUNKS_PER_ROW);
                }
            }
        }
        [[unroll]] for (uint i = 0; i < W_CHUNKS; ++i) {
            const uint index = tid + i * THREADS;
            if (HAS_W_CHUNK(i)) {
                w_tile[(index / CHUNKS_PER_ROW) * STRIDE + index % CHUNKS_PER_ROW] = dequantized_chunk(words[i], scale_bias[i]);
            }
        }
        [[unroll]] for (uint i = 0; i < X_CHUNKS; ++i) {
            const uint index = tid + i * THREADS;
            if (HAS_X_CHUNK(i)) {
                x_tile[(index / CHUNKS_PER_ROW) * STRIDE + index % CHUNKS_PER_ROW] = xs[i];
            }
        }
        barrier();
        const uint next = k0 + TILE_K;
        if (next < k_end) { // in flight while this step computes
            // A group of 64 columns spans two steps of 32: its scale and bias are read once, at its start.
            const bool new_group = next % pc.group_size == 0 || pc.group_size % TILE_K != 0;
            [[unroll]] for (uint i = 0; i < W_CHUNKS; ++i) {
                const uint index = tid + i * THREADS;
                if (HAS_W_CHUNK(i)) {
                    load_w_chunk(row0 + index / CHUNKS_PER_ROW, next / 8 + index % CHUNKS_PER_ROW, new_group, words[i], scale_bias[i]);
                }
            }
            [[unroll]] for (uint i = 0; i < X_CHUNKS; ++i) {
                const uint index = tid + i * THREADS;
                if (HAS_X_CHUNK(i)) {
                    xs[i] = load_x(token0 + index / CHUNKS_PER_ROW, next / 8 + index % CHUNKS_PER_ROW);
                }
            }
        }
        [[unroll]] for (uint k = 0; k < CHUNKS_PER_ROW; k += 2) { // 16 columns a product
            [[unroll]] for (uint i = 0; i < BLOCKS_T; ++i) {
                coopMatLoadNV(a[i], x_tile, (warp_t * WARP_TOKENS + 16 * i) * STRIDE + k, STRIDE, false);
            }
            [[unroll]] for (uint j = 0; j < BLOCKS_R; ++j) {
                coopMatLoadNV(b[j], w_tile, (warp_r * WARP_ROWS + 16 * j) * STRIDE + k, STRIDE, true);
            }
            [[unroll]] for (uint i = 0; i < BLOCKS_T; ++i) {
                [[unroll]] for (uint j = 0; j < BLOCKS_R; ++j) {
                    sums[i][j] = coopMatMulAddNV(a[i], b[j], sums[i][j]);
                }
            }
        }
        barrier();
    }
}

// Writes `sums` to the tile at (row0, token0) of y from element y_offset on.
void store_tile(uint row0, uint token0, uint y_offset, Accumulator sums[BLOCKS_T][BLOCKS_R]) {
    const uint warp = gl_SubgroupID;
    const uint lane = gl_SubgroupInvocationID;
    const uint warp_t = warp / WARPS_R;
    const uint warp_r = warp % WARPS_R;
    const uint block = warp * 256;
    [[unroll]] for (uint i = 0; i < BLOCKS_T; ++i) {
        [[unroll]] for (uint j = 0; j < BLOCKS_R; ++j) {
            const uint first_token = token0 + warp_t * WARP_TOKENS + 16 * i;
            const uint first_row = row0 + warp_r * WARP_ROWS + 16 * j;
            if (first_token + 16 <= pc.tokens && first_row + 16 <= pc.rows && pc.output_stride % 4 == 0) { // 16-byte aligned rows
                coopMatStoreNV(sums[i][j], y, y_offset + first_token * pc.output_stride + first_row, pc.output_stride, false);
                continue;
            }
            coopMatStoreNV(sums[i][j], out_blocks, block, 16, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < 256; e += SUBGROUP) {
                const uint token = first_token + e / 16;
                const uint row = first_row + e % 16;
                if (token < pc.tokens && row < pc.rows) {
                    y[y_offset + token * pc.output_stride + row] = out_blocks[block + e];
                }
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
        }
    }
}

#ifdef STREAM_K
// Stream-K: the grid is gl_NumWorkGroups.x workgroups (W). Where the tiles make two whole waves
// or more, those go first, one to a workgroup per wave, as without stream-K, and only the last
// partial wave's tiles are shared out; else (or with STREAM_MODE 1, a specialization constant) all
// tiles are, and with STREAM_MODE 2 only the partial wave's always. On an H200, gate·up at 1,024
// tokens (456 tiles on 132 workgroups) took 649 µs with the partial wave shared out, 684 with all
// tiles and 737 without stream-K; at 512 tokens (228 tiles) 357 with all tiles, 361 with the
// partial wave. Workgroup w takes
// steps [w · S / W, (w + 1) · S / W) of the shared tiles' S steps, tile by tile (rows of tiles
// first). A tile split between workgroups has each piece's sums written to `partials`: a
// workgroup's first piece to its slot 0, its last to slot 1. The piece that finishes last (an
// atomic count per tile) adds up all of them in the order of the workgroups, so the result does
// not depend on which one that is, and writes the tile. So the last wave of tiles does not leave
// multiprocessors idle: gate·up at 512 tokens is 228 tiles on an H200's 132 multiprocessors.
layout(constant_id = 1) const uint STREAM_MODE = 0;  // 0: as above; 1: all tiles shared out; 2: the partial wave's
layout(std430, binding = 5) coherent buffer Partials { float partials[]; };   // (workgroups, 3, TILE_TOKENS, TILE_ROWS) first and last pieces' sums, edge scratch
layout(std430, binding = 6) coherent buffer PieceCounts { uint pieces_done[]; }; // (tiles) pieces of each split tile done, 0 between dispatches
#ifdef ACCUMULATE
// With ACCUMULATE each tile is also added into `accumulator` (the residual add fused).
layout(std430, binding = 7) buffer Residual { float accumulator[]; };           // (tokens, outputStride)
#endif
shared bool is_last_piece;

// The first shared step of workgroup v of `groups`, the shared steps being [base, base + total).
uint range_start(uint v, uint base, uint total, uint groups) {
    return base + v * total / groups;  // (total · groups < 2^32)
}

// The workgroup whose range holds step s.
uint range_owner(uint s, uint base, uint total, uint groups) {
    uint v = min(groups - 1, (s - base) * groups / total);
    while (v + 1 < groups && range_start(v + 1, base, total, groups) <= s) {
        ++v;
    }
    while (v > 0 && range_start(v, base, total, groups) > s) {
        --v;
    }
    return v;
}

// Multiplies tile `tile`'s steps [k_first, k_last) into `sums`; for a split tile, leaves the
// piece's sums in `partials` and returns whether this workgroup is the last piece, whose `sums`
// are then the whole tile's.
bool multiply_piece(uint tile, uint k_first, uint k_last, uint steps, uint base, uint total, bool first_piece,
                    inout Accumulator sums[BLOCKS_T][BLOCKS_R]) {
    const uint tid = gl_LocalInvocationID.x;
    const uint warp_t = gl_SubgroupID / WARPS_R, warp_r = gl_SubgroupID % WARPS_R;
    const uint row_tiles = (pc.rows + TILE_ROWS - 1) / TILE_ROWS;
    const uint row0 = (tile % row_tiles) * TILE_ROWS, token0 = (tile / row_tiles) * TILE_TOKENS;
    [[unroll]] for (uint i = 0; i < BLOCKS_T; ++i) {
        [[unroll]] for (uint j = 0; j < BLOCKS_R; ++j) {
            sums[i][j] = Accumulator(0.0);
        }
    }
    multiply_share(row0, token0, k_first * TILE_K, min(k_last * TILE_K, pc.columns), sums);
    if (k_first == 0 && k_last == steps) {
        return true;
    }
    const uint tile_size = TILE_TOKENS * TILE_ROWS, groups = gl_NumWorkGroups.x;
    const uint mine = (3 * gl_WorkGroupID.x + (first_piece ? 0 : 1)) * tile_size;
    [[unroll]] for (uint i = 0; i < BLOCKS_T; ++i) {
        [[unroll]] for (uint j = 0; j < BLOCKS_R; ++j) {
            const uint offset = (warp_t * WARP_TOKENS + 16 * i) * TILE_ROWS + warp_r * WARP_ROWS + 16 * j;
            coopMatStoreNV(sums[i][j], partials, mine + offset, TILE_ROWS, false);
        }
    }
    const uint tile_start = tile * steps;
    const uint first_owner = range_owner(tile_start, base, total, groups);
    const uint last_owner = range_owner(tile_start + steps - 1, base, total, groups);
    memoryBarrierBuffer();
    barrier();
    if (tid == 0) {
        is_last_piece = atomicAdd(pieces_done[tile], 1u) == last_owner - first_owner;
    }
    barrier();
    if (!is_last_piece) {
        return false;
    }
    memoryBarrierBuffer();
    [[unroll]] for (uint i = 0; i < BLOCKS_T; ++i) {
        [[unroll]] for (uint j = 0; j < BLOCKS_R; ++j) {
            sums[i][j] = Accumulator(0.0);
        }
    }
    for (uint v = first_owner; v <= last_owner; ++v) {
        // Workgroup v's piece of this tile is its first piece where its range starts in the tile.
        const uint theirs = (3 * v + (range_start(v, base, total, groups) >= tile_start ? 0 : 1)) * tile_size;
        [[unroll]] for (uint i = 0; i < BLOCKS_T; ++i) {
            [[unroll]] for (uint j = 0; j < BLOCKS_R; ++j) {
                Accumulator other;
                const uint offset = (warp_t * WARP_TOKENS + 16 * i) * TILE_ROWS + warp_r * WARP_ROWS + 16 * j;
                coopMatLoadNV(other, partials, theirs + offset, TILE_ROWS, false);
                [[unroll]] for (int e = 0; e < other.length(); ++e) {  // (OpFAdd on the matrices crashes shaderc's optimizer)
                    sums[i][j][e] += other[e];
                }
            }
        }
    }
    if (tid == 0) {
        pieces_done[tile] = 0u;
    }
    return true;
}

// Writes tile `tile` from `sums`. Edge blocks go out through this workgroup's scratch slot of
// `partials`, not through `out_blocks` as in store_tile: in the stream-K loop that path wrote
// wrong values for a 488-token prompt's last tokens on an H200 (its cause not found;
// BENCHMARKS.md, thirteenth session).
void store_stream_tile(uint tile, Accumulator sums[BLOCKS_T][BLOCKS_R]) {
    const uint warp_t = gl_SubgroupID / WARPS_R, warp_r = gl_SubgroupID % WARPS_R;
    const uint row_tiles = (pc.rows + TILE_ROWS - 1) / TILE_ROWS;
    const uint row0 = (tile % row_tiles) * TILE_ROWS, token0 = (tile / row_tiles) * TILE_TOKENS;
    const uint scratch = (3 * gl_WorkGroupID.x + 2) * TILE_TOKENS * TILE_ROWS + gl_SubgroupID * 256;
    [[unroll]] for (uint i = 0; i < BLOCKS_T; ++i) {
        [[unroll]] for (uint j = 0; j < BLOCKS_R; ++j) {
            const uint first_token = token0 + warp_t * WARP_TOKENS + 16 * i;
            const uint first_row = row0 + warp_r * WARP_ROWS + 16 * j;
            if (first_token + 16 <= pc.tokens && first_row + 16 <= pc.rows && pc.output_stride % 4 == 0) {
                const uint at = first_token * pc.output_stride + first_row;
                coopMatStoreNV(sums[i][j], y, at, pc.output_stride, false);
#ifdef ACCUMULATE
                Accumulator sum;
                coopMatLoadNV(sum, accumulator, at, pc.output_stride, false);
                [[unroll]] for (int e = 0; e < sum.length(); ++e) {
                    sum[e] += sums[i][j][e];
                }
                coopMatStoreNV(sum, accumulator, at, pc.output_stride, false);
#endif
                continue;
            }
            coopMatStoreNV(sums[i][j], partials, scratch, 16, false);
            subgroupMemoryBarrierBuffer();
            subgroupBarrier();
            for (uint e = gl_SubgroupInvocationID; e < 256; e += SUBGROUP) {
                const uint token = first_token + e / 16, row = first_row + e % 16;
                if (token < pc.tokens && row < pc.rows) {
                    y[token * pc.output_stride + row] = partials[scratch + e];
#ifdef ACCUMULATE
                    accumulator[token * pc.output_stride + row] += partials[scratch + e];
#endif
                }
            }
            subgroupMemoryBarrierBuffer();
            subgroupBarrier();
        }
    }
}
#endif

void main() {
    Accumulator sums[BLOCKS_T][BLOCKS_R]; // (tokens, rows) 16×16 blocks of this subgroup's part of the tile
#ifdef STREAM_K
    const uint groups = gl_NumWorkGroups.x, w = gl_WorkGroupID.x;
    const uint steps = (pc.columns + TILE_K - 1) / TILE_K;  // a tile's
    const uint tiles = ((pc.rows + TILE_ROWS - 1) / TILE_ROWS) * ((pc.tokens + TILE_TOKENS - 1) / TILE_TOKENS);
    // Tiles done whole, a wave at a time (where what is left gives every workgroup a step at least).
    const uint waves = tiles / groups;
    uint whole = STREAM_MODE == 2 || (STREAM_MODE == 0 && waves >= 2) ? waves * groups : 0;
    if ((tiles - whole) * steps < groups) {
        whole = 0;
    }
    for (uint tile = w; tile < whole; tile += groups) {
        multiply_piece(tile, 0, steps, steps, 0, 1, true, sums);
        store_stream_tile(tile, sums);
    }
    const uint base = whole * steps, total = (tiles - whole) * steps;
    const uint first_step = range_start(w, base, total, groups), end_step = range_start(w + 1, base, total, groups);
    for (uint s = first_step; s < end_step;) {
        const uint tile = s / steps, k_first = s % steps, k_last = min(steps, k_first + (end_step - s));
        const bool first_piece = s == first_step;
        s += k_last - k_first;
        if (multiply_piece(tile, k_first, k_last, steps, base, total, first_piece, sums)) {
            store_stream_tile(tile, sums);
        }
    }
#else
    [[unroll]] for (uint i = 0; i < BLOCKS_T; ++i) {
        [[unroll]] for (uint j = 0; j < BLOCKS_R; ++j) {
            sums[i][j] = Accumulator(0.0);
        }
    }
    const ColumnShare share = column_share();
    multiply_share(gl_WorkGroupID.x * TILE_ROWS, gl_WorkGroupID.y * TILE_TOKENS, share.k_begin, share.k_end, sums);
    store_tile(gl_WorkGroupID.x * TILE_ROWS, gl_WorkGroupID.y * TILE_TOKENS, share.y_offset, sums);
#endif
}
