#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// Causal grouped-query attention of a prompt, flash style and tiled: workgroup (query block, head)
// takes Q_BLOCK consecutive queries of one head and walks their cached keys K_BLOCK at a time,
// so every key and value row staged in shared memory serves Q_BLOCK queries. Per block:
//   scores   invocation (query q, key k + 8m), m < K_BLOCK / 8: dot products from shared memory;
//   softmax  the 8 invocations of a query combine their maxima and sums through shared memory
//            and rescale the running output (online softmax, Float32);
//   values   invocation (query q, dimension d + 8n) accumulates its outputs over the block's keys.
// The same 8 invocations hold a query's running max and sum, so no other exchange is needed.
// Needs head_dim a multiple of 8 and at most MAX_HEAD_DIM, a workgroup
// of THREADS (the Swift side passes it as specialization constant 0), and the Float16 KV cache.
// THREADS, K_BLOCK and MAX_HEAD_DIM come from Shaders/variants.json; `PromptAttention` in Swift
// derives the dispatch and the device checks from the same numbers (a test compares them).
// (Decode steps use attention_split.comp.)
#include "common.glsl"

#define Q_BLOCK (THREADS / 8)          // queries per workgroup: 8 invocations each; K_BLOCK keys per step
#define KEYS_PER_THREAD (K_BLOCK / 8)
#define DIMS_PER_THREAD (MAX_HEAD_DIM / 8)
// Strides of the shared tiles, padded by one element against bank conflicts.
#define Q_STRIDE (MAX_HEAD_DIM / 2 + 1) // vec2s between staged queries
#define KV_STRIDE (MAX_HEAD_DIM / 2 + 1) // uints (Float16 pairs) between staged keys or values
#define P_STRIDE (K_BLOCK + 1)          // floats between queries' probabilities

layout(std430, binding = 0) readonly buffer Queries { float queries[]; };      // (count, heads · headDim) Float32
layout(std430, binding = 1) readonly buffer Keys { uint keys[]; };             // (kvHeads, context, headDim) Float16 pairs
layout(std430, binding = 2) readonly buffer Values { uint values[]; };         // (kvHeads, context, headDim) Float16 pairs
layout(std430, binding = 3) writeonly buffer Output { float y[]; };            // (count, heads · headDim) Float32
layout(std430, binding = 4) readonly buffer Parameters { uint parameters[]; }; // per-step values written by the host

layout(push_constant) uniform AttentionConstants {
    uint count;
    uint position_slot; // parameters[position_slot] is the first query's position
    uint heads;
    uint kv_heads;
    uint head_dim;
    uint context;
    float scale;        // 1 / sqrt(headDim)
    uint chunk_size;    // unused here (attention_split.comp's keys per workgroup)
    uint chunks;        // unused here (attention_split.comp's workgroups per token and head)
    uint rotary;        // unused here (attention_split.comp's rotated dimensions with ROPE)
} pc;

shared vec2 query_tile[Q_BLOCK * Q_STRIDE];        // (Q_BLOCK, headDim / 2 + pad) the queries times the scale
shared uint key_tile[K_BLOCK * KV_STRIDE];          // (K_BLOCK, headDim / 2 + pad) Float16 pairs
shared uint value_tile[K_BLOCK * KV_STRIDE];        // (K_BLOCK, headDim / 2 + pad) Float16 pairs
shared float probabilities[Q_BLOCK * P_STRIDE];     // (Q_BLOCK, K_BLOCK + pad) softmax numerators of the block
shared float part_max[THREADS];                     // (Q_BLOCK, 8) each invocation's largest score of the block
shared float part_sum[THREADS];                     // (Q_BLOCK, 8) each invocation's sum of numerators

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint q = tid / 8;      // this invocation's query in the block
    const uint part = tid % 8;   // its share of the query's keys and dimensions
    const uint head = gl_WorkGroupID.y;
    const uint first_query = gl_WorkGroupID.x * Q_BLOCK;
    const uint kv_head = head / (pc.heads / pc.kv_heads);
    const uint pairs = pc.head_dim / 2;
    const uint start = parameters[pc.position_slot];
    const uint queries_here = min(Q_BLOCK, pc.count - first_query);
    // Rows past the prompt's end repeat its last query; their results are not written.
    const uint position = start + first_query + min(q, queries_here - 1);

    for (uint i = tid; i < Q_BLOCK * pairs; i += THREADS) {
        const uint row = i / pairs, pair = i % pairs;
        const uint token = first_query + min(row, queries_here - 1);
        const uint base = token * pc.heads * pc.head_dim + head * pc.head_dim + 2 * pair;
        query_tile[row * Q_STRIDE + pair] = vec2(queries[base], queries[base + 1]) * pc.scale;
    }

    float running_max = -1.0 / 0.0;
    float running_sum = 0.0;
    float outputs[DIMS_PER_THREAD]; // dimensions part + 8n of query q, unnormalised
    [[unroll]] for (uint n = 0; n < DIMS_PER_THREAD; ++n) {
        outputs[n] = 0.0;
    }
    const uint end = start + first_query + queries_here; // keys 0 ..< end are seen by some query here
    const uint cache_base = kv_head * pc.context * pairs;
    for (uint block = 0; block < end; block += K_BLOCK) {
        barrier(); // the previous block's tiles are no longer read
        for (uint i = tid; i < K_BLOCK * pairs; i += THREADS) {
            const uint key = i / pairs, pair = i % pairs;
            const uint source = cache_base + min(block + key, end - 1) * pairs + pair;
            key_tile[key * KV_STRIDE + pair] = keys[source];
            value_tile[key * KV_STRIDE + pair] = values[source];
        }
        barrier();

        float scores[KEYS_PER_THREAD];
        float block_max = -1.0 / 0.0;
        [[unroll]] for (uint m = 0; m < KEYS_PER_THREAD; ++m) {
            const uint key = part + 8 * m;
            float dot_qk = 0.0;
            for (uint pair = 0; pair < pairs; ++pair) {
                const vec2 k = unpackHalf2x16(key_tile[key * KV_STRIDE + pair]);
                dot_qk += dot(query_tile[q * Q_STRIDE + pair], k);
            }
            scores[m] = block + key <= position ? dot_qk : -1.0 / 0.0;
            block_max = max(block_max, scores[m]);
        }
        part_max[tid] = block_max;
        barrier();
        float query_max = part_max[q * 8];
        [[unroll]] for (uint i = 1; i < 8; ++i) {
            query_max = max(query_max, part_max[q * 8 + i]);
        }
        // Block 0 always holds key 0, which every query sees, so new_max is finite from then on.
        const float new_max = max(running_max, query_max);
        float block_sum = 0.0;
        [[unroll]] for (uint m = 0; m < KEYS_PER_THREAD; ++m) {
            const float p = exp(scores[m] - new_max);
            probabilities[q * P_STRIDE + part + 8 * m] = p;
            block_sum += p;
        }
        part_sum[tid] = block_sum;
        barrier(); // probabilities and partial sums are published
        float query_sum = 0.0;
        [[unroll]] for (uint i = 0; i < 8; ++i) {
            query_sum += part_sum[q * 8 + i];
        }
        const float correction = exp(running_max - new_max);
        running_sum = running_sum * correction + query_sum;
        running_max = new_max;

        [[unroll]] for (uint n = 0; n < DIMS_PER_THREAD; ++n) {
            outputs[n] *= correction;
        }
        for (uint key = 0; key < K_BLOCK; ++key) {
            const float p = probabilities[q * P_STRIDE + key];
            [[unroll]] for (uint n = 0; n < DIMS_PER_THREAD / 2; ++n) {
                const uint pair = part + 8 * n; // dimensions 2·pair, 2·pair + 1
                if (pair < pairs) {
                    const vec2 v = unpackHalf2x16(value_tile[key * KV_STRIDE + pair]);
                    outputs[2 * n] += p * v.x;
                    outputs[2 * n + 1] += p * v.y;
                }
            }
        }
    }

    if (q < queries_here) {
        const uint base = (first_query + q) * pc.heads * pc.head_dim + head * pc.head_dim;
        [[unroll]] for (uint n = 0; n < DIMS_PER_THREAD / 2; ++n) {
            const uint pair = part + 8 * n;
            if (pair < pairs) {
                y[base + 2 * pair] = outputs[2 * n] / running_sum;
                y[base + 2 * pair + 1] = outputs[2 * n + 1] / running_sum;
            }
        }
    }
}
