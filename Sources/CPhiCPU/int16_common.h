// Internal interface of the int16 kernels (x86-64 only): one product's operands, and the kernels.
#ifndef CPHICPU_INT16_COMMON_H
#define CPHICPU_INT16_COMMON_H

#include "avx2_common.h"

// x / scale = hi + lo / 2^LO_BITS (|lo| <= 2^14): the lo parts keep 15 more bits of x.
#define LO_BITS 15

// One call's operands, as in phi_cpu_quantized_matmul_int16 (include/CPhiCPU.h).
struct int16_problem {
    const uint32_t *words;   // (rows, words_per_row) packed weights
    const uint16_t *scales;  // (rows, groups_per_row) Float16
    const uint16_t *biases;  // (rows, groups_per_row) Float16
    int words_per_row, groups_per_row, group_size;
    const int16_t *xq;       // (tokens, 2 * columns) quantized x: per block, hi then lo parts, permuted
    const float *x_scales;   // (tokens, groups_per_row)
    const float *sums;       // (tokens, groups_per_row) exact float sums of x per group
    int tokens, columns;
    float *out;              // out[t * out_stride + r]
    int out_stride;
};

void phi_cpu_int16_rows_avx2(const struct int16_problem *p, int bits, int row_start, int row_end);
void phi_cpu_int16_rows_vnni(const struct int16_problem *p, int bits, int row_start, int row_end);

#endif
