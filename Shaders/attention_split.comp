#version 450
#extension GL_GOOGLE_include_directive : require
// Causal grouped-query attention of decode steps, split over the keys (flash decoding): workgroup
// (chunk, head, token) takes `chunk_size` cached keys of one head, in blocks of at most
// SCORE_BLOCK with an online softmax, and writes its partial result (unnormalised output, max,
// sum) for attention_merge.comp to combine.
// Scores: one key per invocation, its row read in 16-byte loads (8 Float16 values each).
// Values: invocations split as (key slice, 8 dimensions), so head_dim / 8 neighbouring invocations
// read one value row together; the slices' sums are added in shared memory at the end.
// Needs head_dim a multiple of 8 and at most MAX_HEAD_DIM, the workgroup at least head_dim / 8
// wide, and the Float16 KV cache (kv_cache.glsl's default layout).
#include "common.glsl"
#include "reduce.glsl"

#define MAX_HEAD_DIM 256
#define SCORE_BLOCK 512
#define MAX_WIDTH 256

layout(std430, binding = 0) readonly buffer Queries { vec4 queries[]; };      // (count, heads · headDim) Float32
layout(std430, binding = 1) readonly buffer Keys { uvec4 keys[]; };           // (kvHeads, context, headDim) Float16, 8 a load
layout(std430, binding = 2) readonly buffer Values { uvec4 values[]; };       // (kvHeads, context, headDim) Float16, 8 a load
layout(std430, binding = 3) writeonly buffer Output { float y[]; };           // (count, heads, chunks, headDim + 2)
layout(std430, binding = 4) readonly buffer Parameters { uint parameters[]; }; // per-step values written by the host

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
} pc;

shared vec4 query[MAX_HEAD_DIM / 4];       // (headDim / 4) the query times the scale
shared float weights[SCORE_BLOCK];         // (keys of the block) scores, then softmax numerators
shared vec4 slice_sums[2 * MAX_WIDTH];     // (slices, headDim / 4) each slice's output

// The 8 Float16 values of a 16-byte load as two vec4s.
void unpack8(uvec4 word, out vec4 low, out vec4 high) {
    low = vec4(unpackHalf2x16(word.x), unpackHalf2x16(word.y));
    high = vec4(unpackHalf2x16(word.z), unpackHalf2x16(word.w));
}

void main() {
    const uint chunk = gl_WorkGroupID.x;
    const uint head = gl_WorkGroupID.y;
    const uint t = gl_WorkGroupID.z;
    const uint lane = gl_LocalInvocationID.x;
    const uint width = gl_WorkGroupSize.x;
    const uint kv_head = head / (pc.heads / pc.kv_heads);
    const uint dims4 = pc.head_dim / 4, dims8 = pc.head_dim / 8;
    for (uint d = lane; d < dims4; d += width) {
        query[d] = queries[(t * pc.heads + head) * dims4 + d] * pc.scale;
    }

    const uint last = parameters[pc.position_slot] + t; // attends to positions 0...last
    const uint begin = chunk * pc.chunk_size;
    const uint end = min(last + 1, begin + pc.chunk_size);
    const uint cache_base = kv_head * pc.context * dims8; // in 16-byte loads
    const uint dim8 = lane % dims8, slice = lane / dims8, slices = width / dims8;
    vec4 out_low = vec4(0.0), out_high = vec4(0.0);        // dimensions 8 · dim8 ... + 7 of this slice
    float running_max = -1.0 / 0.0;
    float running_sum = 0.0;
    barrier();  // the query is staged
    for (uint block = begin; block < end; block += SCORE_BLOCK) {
        const uint n = min(uint(SCORE_BLOCK), end - block);
        float block_max = -1.0 / 0.0;
        for (uint i = lane; i < n; i += width) {
            const uint row = cache_base + (block + i) * dims8;
            float score = 0.0;
            for (uint c = 0; c < dims8; ++c) {
                vec4 low, high;
                unpack8(keys[row + c], low, high);
                score += dot(low, query[2 * c]) + dot(high, query[2 * c + 1]);
            }
            weights[i] = score;
            block_max = max(block_max, score);
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
            for (uint i = slice; i < n; i += slices) {
                vec4 low, high;
                unpack8(values[cache_base + (block + i) * dims8 + dim8], low, high);
                const float p = weights[i];
                out_low += p * low;
                out_high += p * high;
            }
        }
        barrier();  // the next block rewrites the weights
    }
    if (slice < slices) {
        slice_sums[slice * dims4 + 2 * dim8] = out_low;
        slice_sums[slice * dims4 + 2 * dim8 + 1] = out_high;
    }
    barrier();
    const uint partial = ((t * pc.heads + head) * pc.chunks + chunk) * (pc.head_dim + 2);
    for (uint d = lane; d < dims4; d += width) {
        vec4 total = vec4(0.0);
        for (uint s = 0; s < slices; ++s) {
            total += slice_sums[s * dims4 + d];
        }
        y[partial + 4 * d] = total.x;
        y[partial + 4 * d + 1] = total.y;
        y[partial + 4 * d + 2] = total.z;
        y[partial + 4 * d + 3] = total.w;
    }
    if (lane == 0) {
        y[partial + pc.head_dim] = running_max;
        y[partial + pc.head_dim + 1] = running_sum;
    }
}
