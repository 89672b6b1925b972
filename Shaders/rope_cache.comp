#version 450
#extension GL_GOOGLE_include_directive : require
// RoPE (rotate-half, partial rotary) on q and k of a fused qkv row, writing rotated q to `queries`
// and rotated k and plain v into the layer's KV cache. One invocation per (token, head slot, dim),
// head slots being the q heads, then the k heads, then the v heads.
#include "common.glsl"

layout(std430, binding = 0) readonly buffer QKV { float qkv[]; };         // (count, (heads + 2 · kvHeads) · headDim)
layout(std430, binding = 1) readonly buffer Cosines { float cosines[]; }; // (context, rotary / 2), scaled
layout(std430, binding = 2) readonly buffer Sines { float sines[]; };     // (context, rotary / 2), scaled
layout(std430, binding = 3) writeonly buffer Queries { float queries[]; };// (count, heads · headDim)
layout(std430, binding = 4) writeonly buffer Keys { float keys[]; };      // (kvHeads, context, headDim)
layout(std430, binding = 5) writeonly buffer Values { float values[]; };  // (kvHeads, context, headDim)
layout(std430, binding = 6) readonly buffer Parameters { uint parameters[]; }; // per-step values written by the host

layout(push_constant) uniform RopeConstants {
    uint count;
    uint position_slot; // parameters[position_slot] is the first token's position
    uint heads;
    uint kv_heads;
    uint head_dim;
    uint rotary; // rotated leading dimensions of each head
    uint context;
} pc;

void main() {
    const uint slots = pc.heads + 2 * pc.kv_heads;
    const uint index = gl_GlobalInvocationID.x;
    if (index >= pc.count * slots * pc.head_dim) {
        return;
    }
    const uint d = index % pc.head_dim;
    const uint slot = (index / pc.head_dim) % slots;
    const uint t = index / (pc.head_dim * slots);
    const uint position = parameters[pc.position_slot] + t;
    const uint row = t * slots * pc.head_dim + slot * pc.head_dim;
    float value = qkv[row + d];
    if (slot < pc.heads + pc.kv_heads && d < pc.rotary) {
        const uint half_rotary = pc.rotary / 2;
        const uint i = d % half_rotary;
        const float c = cosines[position * half_rotary + i];
        const float s = sines[position * half_rotary + i];
        value = d < half_rotary ? value * c - qkv[row + d + half_rotary] * s
                                : value * c + qkv[row + d - half_rotary] * s;
    }
    if (slot < pc.heads) {
        queries[t * pc.heads * pc.head_dim + slot * pc.head_dim + d] = value;
    } else if (slot < pc.heads + pc.kv_heads) {
        keys[((slot - pc.heads) * pc.context + position) * pc.head_dim + d] = value;
    } else {
        values[((slot - pc.heads - pc.kv_heads) * pc.context + position) * pc.head_dim + d] = value;
    }
}
