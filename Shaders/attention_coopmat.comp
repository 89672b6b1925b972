#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_control_flow_attributes : require
// Causal grouped-query attention of a prompt on NV cooperative matrices (flash attention): each
// subgroup takes 16 consecutive queries of one head, and the WARPS subgroups of a workgroup take
// consecutive ones of the same head, walking their keys together K_BLOCK at a time. Per block:
//   staging the workgroup copies the block's keys and values from the Float16 cache into shared
//           memory in 16-byte loads (those of the next block are loaded into registers while
//           this one is computed); rows past the last key any query here sees are zeros;
//   scores  S (16 queries × K_BLOCK keys) = Q · Kᵀ, Float16 inputs (Q times 1/sqrt(headDim),
//           loaded once), Float32 sums;
//   softmax S goes through shared memory, where two invocations per query mask the keys after
//           its position, update its running max and sum (Float32) and write the numerators P
//           as Float16;
//   values  O (16 × headDim, Float32) is rescaled by each query's correction, then O += P · V.
// Rescaling O (and dividing it by the sums at the end) needs each accumulator element's query:
// `row_of` is loaded into an accumulator from a table of row numbers, which places every row
// number where the same element of any accumulator lives.
// Uses 16×16×16 Float16 → Float32 products and 32-invocation subgroups, as matmul_coopmat.comp
// (the Swift side checks both). Needs headDim a multiple of 16 and at most MAX_HEAD_DIM.
#define SUBGROUP 32
#define WARPS (THREADS / SUBGROUP)
#define KEY_TILES (K_BLOCK / 16)          // 16-key column blocks of S, row blocks of V
#define MAX_DIM_TILES (MAX_HEAD_DIM / 16) // 16-dimension blocks of Q, K, V and O at most
#define ROW_CHUNKS (MAX_HEAD_DIM / 8)     // uvec4s (8 Float16) of a row of Q, K or V at most
#define STRIDE (ROW_CHUNKS + 1)           // uvec4s between staged rows: padded by 16 bytes against bank conflicts
#define TILE_CHUNKS ((K_BLOCK * ROW_CHUNKS + THREADS - 1) / THREADS) // uvec4s of K (and of V) each invocation stages
#define S_STRIDE (K_BLOCK + 4)            // floats between rows of S (16-byte multiples)
#define P_STRIDE (K_BLOCK + 8)            // Float16 between rows of P (16-byte multiples)
#define STAGED_ROWS (2 * K_BLOCK > 16 * WARPS ? 2 * K_BLOCK : 16 * WARPS)
layout(local_size_x = THREADS) in;
// headDim / 16, a specialization constant (id 0) set by the Swift side: the loops over blocks of
// dimensions then have a fixed length and no test per block (with a test against headDim / 16
// from the push constants, the kernel took 112 µs instead of 67 on an H200).
layout(constant_id = 0) const uint DIM_TILES = MAX_DIM_TILES;

layout(std430, binding = 0) readonly buffer Queries { vec4 queries[]; };       // (count, heads · headDim) Float32
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };            // (kvHeads, context, headDim) Float16
layout(std430, binding = 2) readonly buffer Values { uvec4 values[]; };        // (kvHeads, context, headDim) Float16
layout(std430, binding = 3) writeonly buffer Output { float y[]; };            // (count, heads · headDim) Float32
layout(std430, binding = 4) readonly buffer Parameters { uint parameters[]; }; // per-step values written by the host
layout(std430, binding = 5) writeonly buffer HalfOutput { uvec4 y_half[]; };  // (count, heads · headDim / 8) 8 Float16 of y, with pc.chunk_size = 1

layout(push_constant) uniform AttentionConstants {
    uint count;
    uint position_slot; // parameters[position_slot] is the first query's position
    uint heads;
    uint kv_heads;
    uint head_dim;
    uint context;
    float scale;        // 1 / sqrt(headDim)
    uint chunk_size;    // 1: y is also written as Float16 to y_half, for the product that reads it; attention_split.comp's keys per workgroup
    uint chunks;        // 1: each workgroup takes two query groups (see main); attention_split.comp's workgroups per token and head
    uint rotary;        // unused here (attention_split.comp's rotated dimensions with ROPE)
} pc;

shared uvec4 staged[STAGED_ROWS * STRIDE];  // (2 · K_BLOCK, headDim + pad) Float16: the block's keys, then values;
                                            // before the first block (WARPS · 16, headDim + pad): the scaled queries
shared float scores[WARPS * 16 * S_STRIDE]; // per subgroup (16, K_BLOCK + pad) Float32: S of the block, and O's edge rows at the end
shared float16_t p_tile[WARPS * 16 * P_STRIDE]; // per subgroup (16, K_BLOCK + pad) Float16: P of the block
shared float row_factor[WARPS * 16];        // per subgroup (16): each query's correction of O, at the end 1 / its sum
shared float row_numbers[256];              // (16, 16): the row number of each element

#define Accumulator fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define Operand fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define HalfAccumulator fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>

// The attention of query group `query_group` (queries 16 · WARPS · query_group on) of this workgroup's head.
void attend(uint query_group) {
    barrier(); // a previous group's epilogue no longer reads shared memory
    const uint tid = gl_LocalInvocationID.x;
    const uint warp = gl_SubgroupID;
    const uint lane = gl_SubgroupInvocationID;
    const uint head = gl_WorkGroupID.y;
    const uint kv_head = head / (pc.heads / pc.kv_heads);
    const uint row_chunks = pc.head_dim / 8;
    const uint width = pc.heads * pc.head_dim; // floats between query rows
    const uint start = parameters[pc.position_slot];
    const uint group_query = query_group * (16 * WARPS);
    const uint first_query = group_query + 16 * warp;
    // Keys 0 ..< group_keys are seen by some query of the workgroup, 0 ..< keys_seen by one of this subgroup.
    const uint group_keys = start + min(group_query + 16 * WARPS, pc.count);
    const bool has_queries = first_query < pc.count;
    const uint queries_here = has_queries ? min(16u, pc.count - first_query) : 0;
    const uint keys_seen = start + first_query + queries_here;

    for (uint i = tid; i < 256; i += THREADS) {
        row_numbers[i] = float(i / 16);
    }
    // The queries times the scale, as Float16; rows past the prompt's end repeat its last query.
    const uint staged_queries = warp * 16 * STRIDE;
    for (uint i = lane; has_queries && i < 16 * row_chunks; i += SUBGROUP) {
        const uint row = i / row_chunks, chunk = i % row_chunks;
        const uint source = ((first_query + min(row, queries_here - 1)) * width + head * pc.head_dim) / 4 + 2 * chunk;
        const vec4 a = queries[source] * pc.scale, b = queries[source + 1] * pc.scale;
        staged[staged_queries + row * STRIDE + chunk] = uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw));
    }
    barrier();
    Operand q[DIM_TILES]; // (16 queries, 16 dimensions) blocks of Q
    [[unroll]] for (uint j = 0; j < DIM_TILES; ++j) {
        if (has_queries) {
            coopMatLoadNV(q[j], staged, staged_queries + 2 * j, STRIDE, false);
        }
    }
    Accumulator row_of;
    coopMatLoadNV(row_of, row_numbers, 0, 16, false);
    Accumulator o[DIM_TILES]; // (16 queries, 16 dimensions) blocks of O, unnormalised
    [[unroll]] for (uint j = 0; j < DIM_TILES; ++j) {
        o[j] = Accumulator(0.0);
    }

    // Invocations 2r and 2r + 1 keep query r's running max and sum, each over every other key of a block.
    const uint r = lane / 2;
    const uint parity = lane % 2; // keys 2c + parity
    const uint position = start + first_query + min(r, max(queries_here, 1) - 1);
    float running_max = -1.0 / 0.0;
    float running_sum = 0.0;
    const uint scores_base = warp * 16 * S_STRIDE;
    const uint p_base = warp * 16 * P_STRIDE;
    const uint cache_base = kv_head * pc.context * row_chunks; // uvec4s
    uvec4 staged_keys[TILE_CHUNKS], staged_values[TILE_CHUNKS]; // this invocation's share of the next block
    [[unroll]] for (uint i = 0; i < TILE_CHUNKS; ++i) {
        const uint index = tid + i * THREADS, key = index / row_chunks;
        const bool inside = key < K_BLOCK && key < group_keys;
        staged_keys[i] = inside ? keys[cache_base + index] : uvec4(0);
        staged_values[i] = inside ? values[cache_base + index] : uvec4(0);
    }
    for (uint block = 0; block < group_keys; block += K_BLOCK) {
        barrier(); // the previous block (or the queries) is no longer read
        [[unroll]] for (uint i = 0; i < TILE_CHUNKS; ++i) {
            const uint index = tid + i * THREADS, key = index / row_chunks;
            if (key < K_BLOCK) {
                staged[key * STRIDE + index % row_chunks] = staged_keys[i];
                staged[(K_BLOCK + key) * STRIDE + index % row_chunks] = staged_values[i];
            }
        }
        barrier();
        const uint next = block + K_BLOCK;
        if (next < group_keys) { // in flight while this block is computed
            [[unroll]] for (uint i = 0; i < TILE_CHUNKS; ++i) {
                const uint index = tid + i * THREADS, key = index / row_chunks;
                const bool inside = key < K_BLOCK && next + key < group_keys;
                staged_keys[i] = inside ? keys[cache_base + next * row_chunks + index] : uvec4(0);
                staged_values[i] = inside ? values[cache_base + next * row_chunks + index] : uvec4(0);
            }
        }
        if (block >= keys_seen) {
            continue; // none of this subgroup's queries sees these keys
        }

        [[unroll]] for (uint t = 0; t < KEY_TILES; ++t) {
            Accumulator s = Accumulator(0.0);
            [[unroll]] for (uint j = 0; j < DIM_TILES; ++j) {
                Operand k; // (16 dimensions, 16 keys) of Kᵀ: key rows read column-major
                coopMatLoadNV(k, staged, 16 * t * STRIDE + 2 * j, STRIDE, true);
                s = coopMatMulAddNV(q[j], k, s);
            }
            coopMatStoreNV(s, scores, scores_base + 16 * t, S_STRIDE, false);
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        float block_max = -1.0 / 0.0;
        [[unroll]] for (uint c = 0; c < K_BLOCK / 2; ++c) {
            const uint key = 2 * c + parity;
            if (block + key <= position) {
                block_max = max(block_max, scores[scores_base + r * S_STRIDE + key]);
            }
        }
        block_max = max(block_max, subgroupShuffleXor(block_max, 1));
        // Block 0 holds key 0, which every query sees, so new_max is finite from then on.
        const float new_max = max(running_max, block_max);
        float block_sum = 0.0;
        [[unroll]] for (uint c = 0; c < K_BLOCK / 2; ++c) {
            const uint key = 2 * c + parity;
            const float p = block + key <= position ? exp(scores[scores_base + r * S_STRIDE + key] - new_max) : 0.0;
            p_tile[p_base + r * P_STRIDE + key] = float16_t(p);
            block_sum += p;
        }
        block_sum += subgroupShuffleXor(block_sum, 1);
        const float correction = exp(running_max - new_max);
        running_sum = running_sum * correction + block_sum;
        running_max = new_max;
        if (parity == 0) {
            row_factor[warp * 16 + r] = correction;
        }
        subgroupMemoryBarrierShared();
        subgroupBarrier();

        [[unroll]] for (uint j = 0; j < DIM_TILES; ++j) {
            [[unroll]] for (int e = 0; e < o[j].length(); ++e) {
                o[j][e] *= row_factor[warp * 16 + uint(row_of[e])];
            }
        }
        [[unroll]] for (uint t = 0; t < KEY_TILES; ++t) {
            Operand p; // (16 queries, 16 keys) of P
            coopMatLoadNV(p, p_tile, p_base + 16 * t, P_STRIDE, false);
            [[unroll]] for (uint j = 0; j < DIM_TILES; ++j) {
                Operand v; // (16 keys, 16 dimensions) of V
                coopMatLoadNV(v, staged, (K_BLOCK + 16 * t) * STRIDE + 2 * j, STRIDE, false);
                o[j] = coopMatMulAddNV(p, v, o[j]);
            }
        }
        subgroupBarrier(); // P and the factors are read before the next block writes them
    }
    if (!has_queries) {
        return;
    }

    if (parity == 0) {
        row_factor[warp * 16 + r] = 1.0 / running_sum;
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    const uint out_base = first_query * width + head * pc.head_dim;
    [[unroll]] for (uint j = 0; j < DIM_TILES; ++j) {
        [[unroll]] for (int e = 0; e < o[j].length(); ++e) {
            o[j][e] *= row_factor[warp * 16 + uint(row_of[e])];
        }
        if (queries_here == 16) {
            coopMatStoreNV(o[j], y, out_base + 16 * j, width, false);
            if (pc.chunk_size == 1) {
                coopMatStoreNV(HalfAccumulator(o[j]), y_half, (out_base + 16 * j) / 8, width / 8, false);
            }
        } else { // the prompt's last rows: through shared memory, with bounds
            coopMatStoreNV(o[j], scores, scores_base, S_STRIDE, false);
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            for (uint e = lane; e < 256; e += SUBGROUP) {
                if (e / 16 < queries_here) {
                    y[out_base + (e / 16) * width + 16 * j + e % 16] = scores[scores_base + (e / 16) * S_STRIDE + e % 16];
                }
            }
            if (pc.chunk_size == 1 && lane / 2 < queries_here) { // row lane / 2, values 8 · (lane % 2) ..< + 8
                const uint from = scores_base + (lane / 2) * S_STRIDE + 8 * (lane % 2);
                uvec4 halves;
                [[unroll]] for (uint i = 0; i < 4; ++i) {
                    halves[i] = packHalf2x16(vec2(scores[from + 2 * i], scores[from + 2 * i + 1]));
                }
                y_half[(out_base + (lane / 2) * width + 16 * j + 8 * (lane % 2)) / 8] = halves;
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
        }
    }
}

void main() {
    // One query group a workgroup, the last (the most keys) first so that the longest start
    // earliest; or with pc.chunks = 1 (paired), workgroup i takes the groups n - 1 - i and i,
    // whose keys add up to about the same for every workgroup of a prompt's first chunk.
    const uint groups = (pc.count + 16 * WARPS - 1) / (16 * WARPS);
    const uint first = groups - 1 - gl_WorkGroupID.x;
    attend(first);
    if (pc.chunks == 1 && gl_WorkGroupID.x < first) {
        attend(gl_WorkGroupID.x);
    }
}
