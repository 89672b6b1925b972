// AVX2 + FMA + F16C kernels for PhiCPU's quantized products, chosen at run time
// (PhiCPU falls back to its Swift SIMD kernels where phi_cpu_has_avx2() is 0).
#ifndef CPHICPU_H
#define CPHICPU_H

#include <stdint.h>

/// 1 when this CPU runs the AVX2 kernels (x86-64 with AVX2, FMA and F16C), else 0.
int phi_cpu_has_avx2(void);

/// out[t * out_stride + r] = sum_c W[r, c] * x[t, c] for r in [row_start, row_end), t in [0, tokens).
/// W: MLX affine 4- or 8-bit rows of words_per_row 32-bit words (a multiple of 8), Float16 scales
/// and biases (groups_per_row a row). x_permuted: (tokens, columns) with, inside each block of
/// 8 words, element k * (32 / bits) + j at j * 8 + k. group_sums: (tokens, groups_per_row).
void phi_cpu_quantized_matmul_avx2(const uint32_t *words, const uint16_t *scales, const uint16_t *biases,
                                   int words_per_row, int groups_per_row, int group_size, int bits,
                                   const float *x_permuted, const float *group_sums, int tokens, int columns,
                                   int row_start, int row_end, float *out, int out_stride);

#endif
