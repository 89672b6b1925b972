// The KV cache layout: per layer (kvHeads, context, headDim) values, stored as Float16 pairs in
// 32-bit words (KV_F16, the default: half the memory and bandwidth) or as Float32 (KV_F32).
// Needs a binding that declares `keys` and `values` through KV_CACHE_BUFFERS(qualifier, kb, vb).
#ifdef KV_F32
#define KV_WORD float
#define KV_CACHE_BUFFERS(qualifier, key_binding, value_binding) \
    layout(std430, binding = key_binding) qualifier buffer Keys { float keys[]; }; \
    layout(std430, binding = value_binding) qualifier buffer Values { float values[]; };
#define KV_LOAD(buffer, index) buffer[index]
#else
#define KV_CACHE_BUFFERS(qualifier, key_binding, value_binding) \
    layout(std430, binding = key_binding) qualifier buffer Keys { uint keys[]; }; \
    layout(std430, binding = value_binding) qualifier buffer Values { uint values[]; };
#define KV_LOAD(buffer, index) unpackHalf2x16(buffer[(index) >> 1])[(index) & 1u]
#endif
