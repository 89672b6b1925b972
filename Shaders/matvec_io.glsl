// The interface of the decode products (matvec.comp, matvec_staged.comp): bindings and push
// constants, laid out as `MatvecConstants` in Sources/PhiGPU/KernelConstants.swift.
layout(std430, binding = 0) readonly buffer Input { vec4 x[]; };         // (tokens, columns) Float32
layout(std430, binding = 1) readonly buffer Packed { uvec4 packed[]; };  // (rows, columns · BITS / 128) blocks
layout(std430, binding = 2) readonly buffer Scales { uint scales[]; };   // (rows, columns / group) Float16 pairs
layout(std430, binding = 3) readonly buffer Biases { uint biases[]; };   // (rows, columns / group) Float16 pairs
layout(std430, binding = 4) writeonly buffer Output { float y[]; };      // (tokens, outputStride)
layout(std430, binding = 5) buffer Accumulator { float accumulator[]; }; // (tokens, outputStride), += y with ACCUMULATE

layout(push_constant) uniform MatvecConstants {
    uint rows;
    uint columns;
    uint tokens;
    uint input_row;
    uint group_size;
    uint output_stride;
    float epsilon;  // of PROLOGUE_NORM
} pc;
