#version 450
#extension GL_GOOGLE_include_directive : require
// RoPE (rotate-half, partial rotary) on q and k of a fused qkv row, writing rotated q to `queries`
// and rotated k and plain v into the layer's KV cache. One invocation per (token, head slot, pair of
// adjacent dims), head slots being the q heads, then the k heads, then the v heads.
// With VEC4 one invocation per 4 adjacent dims, every access 16 (cache: 8) bytes wide: needs
// headDim a multiple of 4 and rotary of 8 (so that a 4-dim group and its partner lie on one side of
// rotary / 2), and the Float16 cache. (One per pair, scalar, took 19.8 µs at 512 tokens of
// Phi-3.5-mini on an H200, about a third of its bytes' streaming time.)
#include "common.glsl"
#include "kv_cache.glsl"

#ifdef VEC4
layout(std430, binding = 0) readonly buffer QKV { vec4 qkv[]; };          // (count, (heads + 2 · kvHeads) · headDim / 4)
layout(std430, binding = 1) readonly buffer Cosines { vec4 cosines[]; };  // (context, rotary / 8), scaled
layout(std430, binding = 2) readonly buffer Sines { vec4 sines[]; };      // (context, rotary / 8), scaled
layout(std430, binding = 3) writeonly buffer Queries { vec4 queries[]; }; // (count, heads · headDim / 4)
layout(std430, binding = 4) writeonly buffer Keys { uvec2 keys[]; };      // (kvHeads, context, headDim / 4) 4 Float16
layout(std430, binding = 5) writeonly buffer Values { uvec2 values[]; };  // (kvHeads, context, headDim / 4) 4 Float16
#else
layout(std430, binding = 0) readonly buffer QKV { float qkv[]; };         // (count, (heads + 2 · kvHeads) · headDim)
layout(std430, binding = 1) readonly buffer Cosines { float cosines[]; }; // (context, rotary / 2), scaled
layout(std430, binding = 2) readonly buffer Sines { float sines[]; };     // (context, rotary / 2), scaled
layout(std430, binding = 3) writeonly buffer Queries { float queries[]; };// (count, heads · headDim)
KV_CACHE_BUFFERS(writeonly, 4, 5)                                         // (kvHeads, context, headDim) each
#endif
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

#ifdef VEC4
void main() {
    const uint slots = pc.heads + 2 * pc.kv_heads;
    const uint quads = pc.head_dim / 4;
    const uint index = gl_GlobalInvocationID.x;
    if (index >= pc.count * slots * quads) {
        return;
    }
    const uint q = index % quads;  // dims 4q ..< 4q + 4 of the head
    const uint slot = (index / quads) % slots;
    const uint t = index / (quads * slots);
    const uint position = parameters[pc.position_slot] + t;
    const uint row = (t * slots + slot) * quads;  // in vec4s
    vec4 value = qkv[row + q];
    const uint half_quads = pc.rotary / 8;
    if (slot < pc.heads + pc.kv_heads && q < 2 * half_quads) {
        const uint i = position * half_quads + q % half_quads;
        const vec4 c = cosines[i], s = sines[i];
        value = q < half_quads ? value * c - qkv[row + q + half_quads] * s
                               : value * c + qkv[row + q - half_quads] * s;
    }
    if (slot < pc.heads) {
        queries[(t * pc.heads + slot) * quads + q] = value;
        return;
    }
    const bool is_key = slot < pc.heads + pc.kv_heads;
    const uint kv_head = is_key ? slot - pc.heads : slot - pc.heads - pc.kv_heads;
    const uint base = (kv_head * pc.context + position) * quads + q;
    const uvec2 halves = uvec2(packHalf2x16(value.xy), packHalf2x16(value.zw));
    if (is_key) {
        keys[base] = halves;
    } else {
        values[base] = halves;
    }
}
#else
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
#endif
