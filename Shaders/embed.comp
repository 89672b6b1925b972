#version 450
#extension GL_GOOGLE_include_directive : require
// out[t, c] = dequantized embedding[tokens[t], c]. One invocation per output element.
#include "common.glsl"
#include "quantized.glsl"

layout(std430, binding = 0) readonly buffer Tokens { int tokens[]; };  // (count)
layout(std430, binding = 1) readonly buffer Packed { uint packed[]; }; // (vocabulary, columns · BITS / 32)
layout(std430, binding = 2) readonly buffer Scales { uint scales[]; }; // (vocabulary, columns / group) Float16 pairs
layout(std430, binding = 3) readonly buffer Biases { uint biases[]; }; // (vocabulary, columns / group) Float16 pairs
layout(std430, binding = 4) writeonly buffer Output { float y[]; };    // (count, columns)

layout(push_constant) uniform EmbedConstants {
    uint count;
    uint columns;
    uint group_size;
    uint token_offset; // first entry of `tokens` used
} pc;

void main() {
    const uint index = gl_GlobalInvocationID.x;
    if (index >= pc.count * pc.columns) {
        return;
    }
    const uint t = index / pc.columns;
    const uint c = index % pc.columns;
    const uint row = uint(tokens[pc.token_offset + t]);
    const uint word = packed[row * (pc.columns / VALUES_PER_WORD) + c / VALUES_PER_WORD];
    const float q = float((word >> (BITS * (c % VALUES_PER_WORD))) & VALUE_MASK);
    const uint group = row * (pc.columns / pc.group_size) + c / pc.group_size;
    y[index] = HALF_AT(scales, group) * q + HALF_AT(biases, group);
}
