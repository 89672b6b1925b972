#version 450
#extension GL_GOOGLE_include_directive : require
// Combines the partial results of attention.comp with SPLIT: for each (token, head),
// out = Σ_c e^(m_c − M) · o_c / Σ_c e^(m_c − M) · l_c over the chunks c that saw keys.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer Partials { float partials[]; }; // (count, heads, chunks, headDim + 2)
layout(std430, binding = 1) writeonly buffer Output { float y[]; };         // (count, heads · headDim)

layout(push_constant) uniform MergeConstants {
    uint count;
    uint heads;
    uint head_dim;
    uint chunks;
} pc;

void main() {
    const uint token_head = gl_WorkGroupID.x; // t · heads + head
    const uint base = token_head * pc.chunks * (pc.head_dim + 2);
    float overall_max = -1.0 / 0.0;
    for (uint c = 0; c < pc.chunks; ++c) {
        overall_max = max(overall_max, partials[base + c * (pc.head_dim + 2) + pc.head_dim]);
    }
    float total = 0.0;
    for (uint c = 0; c < pc.chunks; ++c) {
        const float m = partials[base + c * (pc.head_dim + 2) + pc.head_dim];
        total += m == -1.0 / 0.0 ? 0.0 : exp(m - overall_max) * partials[base + c * (pc.head_dim + 2) + pc.head_dim + 1];
    }
    for (uint d = gl_LocalInvocationID.x; d < pc.head_dim; d += gl_WorkGroupSize.x) {
        float value = 0.0;
        for (uint c = 0; c < pc.chunks; ++c) {
            const float m = partials[base + c * (pc.head_dim + 2) + pc.head_dim];
            if (m != -1.0 / 0.0) {
                value += exp(m - overall_max) * partials[base + c * (pc.head_dim + 2) + d];
            }
        }
        y[token_head * pc.head_dim + d] = value / total;
    }
}
