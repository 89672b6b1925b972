#version 450
#extension GL_GOOGLE_include_directive : require
// Causal grouped-query attention of a prompt, flash style: one workgroup per (token, head) walks
// that token's cached keys in blocks of the workgroup size with an online softmax, so any context
// length fits. (Decode steps use attention_split.comp.)
#include "common.glsl"
#include "reduce.glsl"
#include "kv_cache.glsl"

#define MAX_HEAD_DIM 256
#define MAX_PER_THREAD 8

layout(std430, binding = 0) readonly buffer Queries { float queries[]; }; // (count, heads · headDim)
KV_CACHE_BUFFERS(readonly, 1, 2)                                          // (kvHeads, context, headDim) each
layout(std430, binding = 3) writeonly buffer Output { float y[]; };       // (count, heads · headDim)
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
} pc;

shared float query[MAX_HEAD_DIM];
shared float weights[1024];

void main() {
    const uint t = gl_WorkGroupID.x;
    const uint head = gl_WorkGroupID.y;
    const uint lane = gl_LocalInvocationID.x;
    const uint width = gl_WorkGroupSize.x;
    const uint kv_head = head / (pc.heads / pc.kv_heads);
    const uint q_base = t * pc.heads * pc.head_dim + head * pc.head_dim;
    for (uint d = lane; d < pc.head_dim; d += width) {
        query[d] = queries[q_base + d];
    }
    barrier();

    const uint last = parameters[pc.position_slot] + t; // attends to positions 0...last
    const uint begin = 0;
    const uint end = last + 1;
    const uint cache_base = kv_head * pc.context * pc.head_dim;
    float running_max = -1.0 / 0.0;
    float running_sum = 0.0;
    float accumulators[MAX_PER_THREAD];
    for (uint i = 0; i < MAX_PER_THREAD; ++i) {
        accumulators[i] = 0.0;
    }
    for (uint block = begin; block < end; block += width) {
        const uint j = block + lane;
        float score = -1.0 / 0.0;
        if (j < end) {
            float dot_qk = 0.0;
            const uint k_base = cache_base + j * pc.head_dim;
            for (uint d = 0; d < pc.head_dim; d += 2) {
                dot_qk += query[d] * KV_LOAD(keys, k_base + d) + query[d + 1] * KV_LOAD(keys, k_base + d + 1);
            }
            score = dot_qk * pc.scale;
        }
        const float new_max = max(running_max, workgroup_max(score));
        const float p = j < end ? exp(score - new_max) : 0.0;
        weights[lane] = p;
        const float correction = exp(running_max - new_max);
        running_sum = running_sum * correction + workgroup_sum(p); // workgroup_sum's barriers publish weights
        running_max = new_max;
        const uint keys_in_block = min(width, end - block);
        for (uint i = 0; i < MAX_PER_THREAD; ++i) {
            const uint d = lane + i * width;
            if (d < pc.head_dim) {
                float acc = accumulators[i] * correction;
                for (uint k = 0; k < keys_in_block; ++k) {
                    acc += weights[k] * KV_LOAD(values, cache_base + (block + k) * pc.head_dim + d);
                }
                accumulators[i] = acc;
            }
        }
        barrier();
    }
    for (uint i = 0; i < MAX_PER_THREAD; ++i) {
        const uint d = lane + i * width;
        if (d < pc.head_dim) {
            y[q_base + d] = accumulators[i] / running_sum;
        }
    }
}
