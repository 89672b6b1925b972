// Reading the engine's quantized matrices (see QuantizedMatrix.swift): MLX affine groups,
// `BITS`-bit values packed into 32-bit words, Float16 scales and biases read as packed pairs
// (so no 16-bit storage feature is needed). Needs bindings named `packed`, `scales`, `biases`.
#ifndef BITS
#define BITS 4
#endif
#define VALUES_PER_WORD (32 / BITS)
#define VALUE_MASK ((1u << BITS) - 1u)

// Float16 number `index` of a buffer of packed pairs.
#define HALF_AT(buffer, index) (unpackHalf2x16(buffer[(index) >> 1])[(index) & 1u])
