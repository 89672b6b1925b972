#version 450
#extension GL_GOOGLE_include_directive : require
// RoPE (rotate-half, partial rotary) on q and k of a fused qkv row, writing rotated q to `queries`
// and rotated k and plain v into the layer's KV cache. One invocation per (token, head slot, pair of
// adjacent dims), head slots being the q heads, then the k heads, then the v heads.
#include "common.glsl"
#include "kv_cache.glsl"

layout(std430, binding = 0) readonly buffer QKV { float qkv[]; };         // (count, (heads + 2 · kvHeads) · headDim)
layout(std430, binding = 1) readonly buffer Cosines { float cosines[]; }; // (context, rotary / 2), scaled
layout(std430, binding = 2) readonly buffer Sines { float sines[]; };     // (context, rotary / 2), scaled
layout(std430, binding = 3) writeonly buffer Queries { float queries[]; };// (count, heads · headDim)
KV_CACHE_BUFFERS(writeonly, 4, 5)                                         // (kvHeads, context, headDim) each
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

float rotated(uint row, uint slot, uint d, uint position) {
    float value = qkv[row + d];
    if (slot < pc.heads + pc.kv_heads && d < pc.rotary) {
        const uint half_rotary = pc.rotary / 2;
        const uint i = d % half_rotary;
        const float c = cosines[position * half_rotary + i];
        const float s = sines[position * half_rotary + i];
        value = d < half_rotary ? value * c - qkv[row + d + half_rotary] * s
                                : value * c + qkv[row + d - half_rotary] * s;
    }
    return value;
}

void main() {
    const uint slots = pc.heads + 2 * pc.kv_heads;
    const uint pairs = pc.head_dim / 2;
    const uint index = gl_GlobalInvocationID.x;
    if (index >= pc.count * slots * pairs) {
        return;
    }
    const uint d = 2 * (index % pairs);
    const uint slot = (index / pairs) % slots;
    const uint t = index / (pairs * slots);
    const uint position = parameters[pc.position_slot] + t;
    const uint row = t * slots * pc.head_dim + slot * pc.head_dim;
    const vec2 value = vec2(rotated(row, slot, d, position), rotated(row, slot, d + 1, position));
    if (slot < pc.heads) {
        const uint base = t * pc.heads * pc.head_dim + slot * pc.head_dim + d;
        queries[base] = value.x;
        queries[base + 1] = value.y;
        return;
    }
    const bool is_key = slot < pc.heads + pc.kv_heads;
    const uint kv_head = is_key ? slot - pc.heads : slot - pc.heads - pc.kv_heads;
    const uint base = (kv_head * pc.context + position) * pc.head_dim + d;
#ifdef KV_F32
    if (is_key) { keys[base] = value.x; keys[base + 1] = value.y; }
    else { values[base] = value.x; values[base + 1] = value.y; }
#else
    if (is_key) { keys[base >> 1] = packHalf2x16(value); }
    else { values[base >> 1] = packHalf2x16(value); }
#endif
}
