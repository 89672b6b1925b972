#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Causal grouped-query attention of decode steps, split over the keys (flash decoding): workgroup
// (chunk, head, token) takes `chunk_size` cached keys of one head, in blocks of at most
// SCORE_BLOCK with an online softmax, and writes its partial result (unnormalised output, max,
// sum). Workgroups whose chunk starts past the query's position return at once. A query whose keys
// all fall in one chunk gets its output from that chunk's workgroup directly. Otherwise the last
// workgroup of a (token, head) to finish (an atomic count per pair) combines the partials into
// the output: out = Σ_c e^(m_c − M) · o_c / Σ_c e^(m_c − M) · l_c, and resets the
// count for the next dispatch.
// Scores: `key_lanes` neighbouring invocations share a key (1 to 8, so that each reads at most
// KEY_LOADS of its row's 16-byte loads of 8 Float16 values), add their parts with subgroup shuffles,
// and take two passes of keys at a time, so that every load of a round is in flight before any is used.
// Values: invocations split as (key slice, 8 dimensions), so head_dim / 8 neighbouring invocations
// read one value row together, VALUE_LOADS rows a round, the first round requested together with
// the keys; the slices' sums are added in shared memory at the end. (One key per invocation and
// one value row at a time, each load waited for before the next, took 16.8 µs a layer at 512 keys
// on an H200, against 14.2 with each round's loads issued together.)
// Combining: each chunk's (max, sum) is read by one invocation, and its output by the invocations
// of a chunk group (dims4 of them, COMBINE_LOADS chunks a round) together with them.
// With ROPE the input is the fused qkv row rather than rotated queries, and the RoPE of rope_cache.comp
// is done here: the query is rotated as it is staged (workgroups of chunk 0 also write it to
// `queries_out`), and the keys and values of this call's own tokens (positions ≥ the first
// token's) are staged from qkv into shared memory, rotated and rounded to Float16 as the cache
// holds them, rather than read from the cache; one workgroup per (kv head, chunk) writes them to
// the cache for later steps (no workgroup of the dispatch reads those positions from the cache).
// Needs head_dim a multiple of 8 and at most MAX_HEAD_DIM, the workgroup at least head_dim / 8
// wide, subgroups of at least 8 invocations, and the Float16 KV cache (kv_cache.glsl's default layout).
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"
#include "reduce.glsl"

#define MAX_HEAD_DIM 256
#define SCORE_BLOCK 512
#define MAX_WIDTH 128  // GPUBackend's split width
#define MAX_CHUNKS 128 // GPUBackend splits the context into at most 128 chunks, and no more than the workgroup is wide
#define KEY_LOADS 4    // 16-byte loads of a key's row per invocation (key_lanes · KEY_LOADS ≥ head_dim / 8)
#define KEY_PASSES 2   // keys per invocation group loaded before any is used
#define VALUE_LOADS 8  // value rows per invocation loaded before any is used
#define COMBINE_LOADS 8 // partials per invocation loaded before any is used, when combining

layout(std430, binding = 0) readonly buffer Input { float input_rows[]; };   // (count, heads · headDim) queries, or with ROPE (count, qkvRows) qkv
layout(std430, binding = 1) buffer Keys { uvec4 keys[]; };                    // (kvHeads, context, headDim) Float16, 8 a load
layout(std430, binding = 2) buffer Values { uvec4 values[]; };                // (kvHeads, context, headDim) Float16, 8 a load
layout(std430, binding = 3) coherent buffer Partials { vec4 partials[]; };    // (count, heads, chunks, headDim / 4 + 1): output, then (max, sum, 0, 0)
layout(std430, binding = 4) readonly buffer Parameters { uint parameters[]; }; // per-step values written by the host
layout(std430, binding = 5) writeonly buffer Output { float y[]; };           // (count, heads · headDim)
layout(std430, binding = 6) coherent buffer Counters { uint finished[]; };    // (count, heads) workgroups done, 0 between dispatches
#ifdef ROPE
layout(std430, binding = 7) readonly buffer Cosines { float cosines[]; };     // (context, rotary / 2), scaled
layout(std430, binding = 8) readonly buffer Sines { float sines[]; };         // (context, rotary / 2), scaled
layout(std430, binding = 9) writeonly buffer QueriesOut { float queries_out[]; }; // (count, heads · headDim) rotated q
#endif

layout(push_constant) uniform AttentionConstants {
    uint count;
    uint position_slot; // parameters[position_slot] is the first query's position
    uint heads;
    uint kv_heads;
    uint head_dim;
    uint context;
    float scale;        // 1 / sqrt(headDim)
    uint chunk_size;    // keys per workgroup
    uint chunks;        // workgroups per (token, head)
    uint rotary;        // rotated leading dimensions of each head (ROPE)
} pc;

shared vec4 query[MAX_HEAD_DIM / 4];       // (headDim / 4) the query times the scale
shared float weights[SCORE_BLOCK];         // (keys of the block) scores, then softmax numerators
shared vec4 slice_sums[2 * MAX_WIDTH];     // (slices, headDim / 4) each slice's output
shared bool is_last;                       // this workgroup finished last for its (token, head)
shared float chunk_weights[MAX_CHUNKS];    // (chunks) e^(m_c − M) of each chunk's partial, for the combination

// The 8 Float16 values of a 16-byte load as two vec4s.
void unpack8(uvec4 word, out vec4 low, out vec4 high) {
    low = vec4(unpackHalf2x16(word.x), unpackHalf2x16(word.y));
    high = vec4(unpackHalf2x16(word.z), unpackHalf2x16(word.w));
}

#ifdef ROPE
// Dimension d of the head starting at input_rows[base], rotated (rotate-half, the leading
// `rotary` dimensions) for `position` when `rotate`.
float rotated(uint base, uint d, uint position, bool rotate) {
    float value = input_rows[base + d];
    if (rotate && d < pc.rotary) {
        const uint half_rotary = pc.rotary / 2;
        const uint i = d % half_rotary;
        const float c = cosines[position * half_rotary + i];
        const float s = sines[position * half_rotary + i];
        value = d < half_rotary ? value * c - input_rows[base + d + half_rotary] * s
                                : value * c + input_rows[base + d - half_rotary] * s;
    }
    return value;
}

// This chunk's positions of this call's own tokens (at most 4): their rotated keys and their values,
// rounded to Float16 as the cache holds them, staged from qkv by the whole workgroup.
shared uvec4 new_keys[4 * MAX_HEAD_DIM / 8];    // (new positions, headDim / 8) Float16, 8 an entry
shared uvec4 new_values[4 * MAX_HEAD_DIM / 8];  // (new positions, headDim / 8) Float16, 8 an entry

// Dimensions 8 · c ... 8 · c + 7 of the key or value at `position`: staged if it is new.
#define ROW(cache, staged, position, c) \
    ((position) >= new_from ? staged[((position) - new_from) * dims8 + (c)] : cache[cache_base + (position) * dims8 + (c)])
#else
#define ROW(cache, staged, position, c) cache[cache_base + (position) * dims8 + (c)]
#endif

void main() {
    const uint chunk = gl_WorkGroupID.x;
    const uint head = gl_WorkGroupID.y;
    const uint t = gl_WorkGroupID.z;
    const uint lane = gl_LocalInvocationID.x;
    const uint width = gl_WorkGroupSize.x;
    const uint group = pc.heads / pc.kv_heads;
    const uint kv_head = head / group;
    const uint dims4 = pc.head_dim / 4, dims8 = pc.head_dim / 8;
    const uint first = parameters[pc.position_slot]; // position of this call's first token
    const uint last = first + t;                     // this query attends to positions 0...last
    const uint used = min(pc.chunks, (last + pc.chunk_size) / pc.chunk_size); // chunks that see keys
    if (chunk >= used) {
        return;  // past the query's position: no keys, and not counted
    }
#ifdef ROPE
    const uint q_base = t * (pc.heads + 2 * pc.kv_heads) * pc.head_dim + head * pc.head_dim;
    for (uint d = lane; d < pc.head_dim; d += width) {
        const float value = rotated(q_base, d, last, true);
        query[d / 4][d % 4] = value * pc.scale;
        if (chunk == 0) {
            queries_out[(t * pc.heads + head) * pc.head_dim + d] = value;
        }
    }
#else
    for (uint d = lane; d < dims4; d += width) {
        query[d] = vec4(input_rows[(t * pc.heads + head) * pc.head_dim + 4 * d], input_rows[(t * pc.heads + head) * pc.head_dim + 4 * d + 1],
                        input_rows[(t * pc.heads + head) * pc.head_dim + 4 * d + 2], input_rows[(t * pc.heads + head) * pc.head_dim + 4 * d + 3])
                   * pc.scale;
    }
#endif

    const uint begin = chunk * pc.chunk_size;
    const uint end = min(last + 1, begin + pc.chunk_size);
    const uint cache_base = kv_head * pc.context * dims8; // in 16-byte loads
#ifdef ROPE
    // Positions new_from ... end - 1 of this chunk are this call's tokens: stage their keys and values.
    const uint new_from = max(begin, first);
    const uint new_count = end > new_from ? end - new_from : 0;
    const uint qkv_rows = (pc.heads + 2 * pc.kv_heads) * pc.head_dim;
    for (uint index = lane; index < new_count * dims8; index += width) {
        const uint j = new_from - first + index / dims8, c = index % dims8;          // token j of the call
        const uint base = j * qkv_rows + (pc.heads + kv_head) * pc.head_dim;         // its key of this kv head
        uvec4 key, value;
        [[unroll]] for (uint k = 0; k < 4; ++k) {
            const uint d = 8 * c + 2 * k;
            key[k] = packHalf2x16(vec2(rotated(base, d, first + j, true), rotated(base, d + 1, first + j, true)));
            value[k] = packHalf2x16(vec2(input_rows[base + pc.kv_heads * pc.head_dim + d],
                                         input_rows[base + pc.kv_heads * pc.head_dim + d + 1]));
        }
        new_keys[index] = key;
        new_values[index] = value;
    }
    barrier();
    // The last token's workgroup of the first q head of each kv head writes them to the cache.
    if (t == pc.count - 1 && head % group == 0) {
        for (uint index = lane; index < new_count * dims8; index += width) {
            const uint position = new_from + index / dims8, c = index % dims8;
            keys[cache_base + position * dims8 + c] = new_keys[index];
            values[cache_base + position * dims8 + c] = new_values[index];
        }
    }
#endif
    const uint dim8 = lane % dims8, slice = lane / dims8, slices = width / dims8;
    vec4 out_low = vec4(0.0), out_high = vec4(0.0);        // dimensions 8 · dim8 ... + 7 of this slice
    float running_max = -1.0 / 0.0;
    float running_sum = 0.0;
    barrier();  // the query is staged
    // Scores: invocation `lane` takes loads part, part + key_lanes, ... of key lane / key_lanes of a pass.
    const uint key_lanes = dims8 <= KEY_LOADS ? 1 : dims8 <= 2 * KEY_LOADS ? 2 : dims8 <= 4 * KEY_LOADS ? 4 : 8;
    const uint part = lane % key_lanes, keys_per_pass = width / key_lanes;
    vec4 q_low[KEY_LOADS], q_high[KEY_LOADS];  // the query's dimensions 8c ... 8c + 7 of this invocation's loads
    [[unroll]] for (uint j = 0; j < KEY_LOADS; ++j) {
        const uint c = part + j * key_lanes;
        q_low[j] = c < dims8 ? query[2 * c] : vec4(0.0);
        q_high[j] = c < dims8 ? query[2 * c + 1] : vec4(0.0);
    }
    for (uint block = begin; block < end; block += SCORE_BLOCK) {
        const uint n = min(uint(SCORE_BLOCK), end - block);
        float block_max = -1.0 / 0.0;
        // The first round of value rows is requested with the keys: it needs no score.
        uvec4 value_rows[VALUE_LOADS];
        if (slice < slices) {
            [[unroll]] for (uint u = 0; u < VALUE_LOADS; ++u) {
                value_rows[u] = ROW(values, new_values, block + min(slice + u * slices, n - 1), dim8);  // past n: loaded, not used
            }
        }
        for (uint i0 = 0; i0 < n; i0 += KEY_PASSES * keys_per_pass) {
            uvec4 rows[KEY_PASSES][KEY_LOADS];
            [[unroll]] for (uint p = 0; p < KEY_PASSES; ++p) {
                const uint position = block + min(i0 + p * keys_per_pass + lane / key_lanes, n - 1);  // past n: loaded, not used
                [[unroll]] for (uint j = 0; j < KEY_LOADS; ++j) {
                    const uint c = part + j * key_lanes;
                    rows[p][j] = c < dims8 ? ROW(keys, new_keys, position, c) : uvec4(0u);
                }
            }
            [[unroll]] for (uint p = 0; p < KEY_PASSES; ++p) {
                float score = 0.0;
                [[unroll]] for (uint j = 0; j < KEY_LOADS; ++j) {
                    vec4 low, high;
                    unpack8(rows[p][j], low, high);
                    score += dot(low, q_low[j]) + dot(high, q_high[j]);
                }
                for (uint offset = 1; offset < key_lanes; offset *= 2) {
                    score += subgroupShuffleXor(score, offset);
                }
                const uint i = i0 + p * keys_per_pass + lane / key_lanes;
                if (i < n) {
                    if (part == 0) {
                        weights[i] = score;
                    }
                    block_max = max(block_max, score);
                }
            }
        }
        const float new_max = max(running_max, workgroup_max(block_max));
        float block_sum = 0.0;
        for (uint i = lane; i < n; i += width) {
            const float p = exp(weights[i] - new_max);
            weights[i] = p;
            block_sum += p;
        }
        const float correction = exp(running_max - new_max);
        running_sum = running_sum * correction + workgroup_sum(block_sum); // its barriers publish the weights
        running_max = new_max;
        out_low *= correction;
        out_high *= correction;
        if (slice < slices) {
            for (uint i0 = slice; i0 < n; i0 += VALUE_LOADS * slices) {
                if (i0 != slice) {
                    [[unroll]] for (uint u = 0; u < VALUE_LOADS; ++u) {
                        value_rows[u] = ROW(values, new_values, block + min(i0 + u * slices, n - 1), dim8);
                    }
                }
                [[unroll]] for (uint u = 0; u < VALUE_LOADS; ++u) {
                    const uint i = i0 + u * slices;
                    if (i < n) {
                        vec4 low, high;
                        unpack8(value_rows[u], low, high);
                        const float p = weights[i];
                        out_low += p * low;
                        out_high += p * high;
                    }
                }
            }
        }
        barrier();  // the next block rewrites the weights
    }
    if (slice < slices) {
        slice_sums[slice * dims4 + 2 * dim8] = out_low;
        slice_sums[slice * dims4 + 2 * dim8 + 1] = out_high;
    }
    barrier();
    const uint pair = t * pc.heads + head;
    if (used == 1) {
        // The only chunk of its (token, head): the output directly, no partial to combine.
        for (uint d = lane; d < dims4; d += width) {
            vec4 total = vec4(0.0);
            for (uint s = 0; s < slices; ++s) {
                total += slice_sums[s * dims4 + d];
            }
            total /= running_sum;
            y[pair * pc.head_dim + 4 * d] = total.x;
            y[pair * pc.head_dim + 4 * d + 1] = total.y;
            y[pair * pc.head_dim + 4 * d + 2] = total.z;
            y[pair * pc.head_dim + 4 * d + 3] = total.w;
        }
        return;
    }
    const uint stride = dims4 + 1;  // vec4s per partial
    const uint partial = (pair * pc.chunks + chunk) * stride;
    for (uint d = lane; d < dims4; d += width) {
        vec4 total = vec4(0.0);
        for (uint s = 0; s < slices; ++s) {
            total += slice_sums[s * dims4 + d];
        }
        partials[partial + d] = total;
    }
    if (lane == 0) {
        partials[partial + dims4] = vec4(running_max, running_sum, 0.0, 0.0);
    }

    // Publish the partial, then count this workgroup done; the last one combines them all.
    memoryBarrierBuffer();
    barrier();
    if (lane == 0) {
        is_last = atomicAdd(finished[pair], 1u) == used - 1;
    }
    barrier();
    if (!is_last) {
        return;
    }
    memoryBarrierBuffer();
    // Invocations split as (chunk group, 4 dimensions): group g takes chunks g, g + groups, ...,
    // COMBINE_LOADS of them requested at once, the first round together with the chunks' (max, sum).
    const uint base = pair * pc.chunks * stride;
    const uint d4 = lane % dims4, chunk_group = lane / dims4, groups = width / dims4;
    vec4 chunk_rows[COMBINE_LOADS];
    if (chunk_group < groups) {
        [[unroll]] for (uint u = 0; u < COMBINE_LOADS; ++u) {
            chunk_rows[u] = partials[base + min(chunk_group + u * groups, used - 1) * stride + d4];  // past used: loaded, not used
        }
    }
    const vec2 stats = lane < used ? partials[base + lane * stride + dims4].xy : vec2(-1.0 / 0.0, 0.0);  // (m_c, l_c) of chunk `lane`
    const float overall_max = workgroup_max(stats.x);
    const float w = lane < used ? exp(stats.x - overall_max) : 0.0;  // e^(m_c − M)
    if (lane < used) {
        chunk_weights[lane] = w;
    }
    const float denominator = workgroup_sum(w * stats.y);  // its barriers publish the chunk weights
    vec4 sums = vec4(0.0);
    if (chunk_group < groups) {
        for (uint c0 = chunk_group; c0 < used; c0 += COMBINE_LOADS * groups) {
            if (c0 != chunk_group) {
                [[unroll]] for (uint u = 0; u < COMBINE_LOADS; ++u) {
                    chunk_rows[u] = partials[base + min(c0 + u * groups, used - 1) * stride + d4];
                }
            }
            [[unroll]] for (uint u = 0; u < COMBINE_LOADS; ++u) {
                const uint c = c0 + u * groups;
                if (c < used) {
                    sums += chunk_weights[c] * chunk_rows[u];
                }
            }
        }
        slice_sums[chunk_group * dims4 + d4] = sums;
    }
    barrier();
    for (uint d = lane; d < dims4; d += width) {
        vec4 total = vec4(0.0);
        for (uint g = 0; g < groups; ++g) {
            total += slice_sums[g * dims4 + d];
        }
        total /= denominator;
        y[pair * pc.head_dim + 4 * d] = total.x;
        y[pair * pc.head_dim + 4 * d + 1] = total.y;
        y[pair * pc.head_dim + 4 * d + 2] = total.z;
        y[pair * pc.head_dim + 4 * d + 3] = total.w;
    }
    if (lane == 0) {
        finished[pair] = 0u;
    }
}
