#version 450
#extension GL_GOOGLE_include_directive : require
// The index of the largest of `count` floats from values[offset] (the first of equal ones, as
// Sampler.argmax), in one workgroup: each invocation scans a strided share, then a tree in shared
// memory combines them. Greedy decoding reads back this index instead of the whole row of logits.
#include "common.glsl"

#define NONE 0xFFFFFFFFu  // no index yet

layout(std430, binding = 0) readonly buffer Values { float values[]; };  // (rows, count) logits
layout(std430, binding = 1) writeonly buffer Result { uint result[]; };  // (1) the index within the row

layout(push_constant) uniform ArgmaxConstants {
    uint count;   // values in the row
    uint offset;  // where the row starts
} pc;

shared float best_values[1024];  // (invocations) each one's largest so far
shared uint best_indices[1024];  // (invocations) and its index, NONE if it has none

// Whether (value, index) comes before (other_value, other_index): larger, or equal and first.
bool before(float value, uint index, float other_value, uint other_index) {
    return other_index == NONE || (index != NONE && (value > other_value || (value == other_value && index < other_index)));
}

void main() {
    const uint tid = gl_LocalInvocationIndex, width = gl_WorkGroupSize.x;
    float best = 0.0;
    uint best_index = NONE;
    if (tid < pc.count) {
        best = values[pc.offset + tid];
        best_index = tid;
    }
    for (uint i = tid + width; i < pc.count; i += width) {
        const float value = values[pc.offset + i];
        if (value > best) {  // later indices win only when strictly larger
            best = value;
            best_index = i;
        }
    }
    best_values[tid] = best;
    best_indices[tid] = best_index;
    barrier();
    for (uint stride = width / 2; stride > 0; stride /= 2) {
        if (tid < stride && before(best_values[tid + stride], best_indices[tid + stride], best_values[tid], best_indices[tid])) {
            best_values[tid] = best_values[tid + stride];
            best_indices[tid] = best_indices[tid + stride];
        }
        barrier();
    }
    if (tid == 0) {
        result[0] = best_indices[0] == NONE ? 0u : best_indices[0];
    }
}
