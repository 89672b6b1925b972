// AVX2 + FMA + F16C (and AVX-512 VNNI) kernels for PhiCPU's quantized products, chosen at run time
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
/// From 5 tokens on, weights are dequantized (s * q + b) into an L1 panel once and shared by all
/// tokens (a float product, no per-token unpacking); fewer tokens unpack in registers.
void phi_cpu_quantized_matmul_avx2(const uint32_t *words, const uint16_t *scales, const uint16_t *biases,
                                   int words_per_row, int groups_per_row, int group_size, int bits,
                                   const float *x_permuted, const float *group_sums, int tokens, int columns,
                                   int row_start, int row_end, float *out, int out_stride);

/// The int16 kernels (quantized_int16.c, quantized_vnni.c): x quantized per group to two int16
/// parts (x / scale = hi + lo / 32768), integer dot products with the 4/8-bit weights, one float
/// conversion per block.
enum { PHI_CPU_INT16_AVX2 = 1, PHI_CPU_INT16_VNNI = 2 };

/// 1 when this CPU runs int16 kernel `kernel` (PHI_CPU_INT16_AVX2 or PHI_CPU_INT16_VNNI), else 0.
int phi_cpu_int16_supported(int kernel);

/// Words per block of kernel `kernel` (8 or 16): the layout phi_cpu_quantize_int16 must use.
int phi_cpu_int16_block_words(int kernel);

/// Quantizes x (tokens rows of x_stride floats, `columns` used) for the int16 kernels.
/// xq: (tokens, 2 * columns): per block of block_words words (B elements), at 2 * block start the
/// hi parts round(x / s) and B further on the lo parts round((x / s - hi) * 32768), s = max |x| of the
/// group / 32767; in each, 16-bit lane l's element j (E = 16 / bits a lane) sits at j * 2 * block_words + l.
/// x_scales: (tokens, columns / group_size), s.
/// group_sums: (tokens, columns / group_size), exact float sums of x per group (the bias term).
void phi_cpu_quantize_int16(const float *x, int x_stride, int tokens, int columns, int group_size, int bits,
                            int block_words, int16_t *xq, float *x_scales, float *group_sums);

/// As phi_cpu_quantized_matmul_avx2, from x quantized by phi_cpu_quantize_int16 with the block
/// words of `kernel`. Needs words_per_row a multiple of the block words, and the group size a
/// multiple or a divisor of the block's elements.
void phi_cpu_quantized_matmul_int16(int kernel, const uint32_t *words, const uint16_t *scales,
                                    const uint16_t *biases, int words_per_row, int groups_per_row, int group_size,
                                    int bits, const int16_t *xq, const float *x_scales, const float *group_sums,
                                    int tokens, int columns, int row_start, int row_end, float *out, int out_stride);

/// The worker pool's synchronisation (pool_sync.c), on plain 32-bit words shared by threads.
/// Every access is sequentially consistent.
uint32_t phi_cpu_atomic_load(const uint32_t *word);
void phi_cpu_atomic_store(uint32_t *word, uint32_t value);
/// Adds `value`, returns the previous value.
uint32_t phi_cpu_atomic_add(uint32_t *word, uint32_t value);
/// Sets *word to `desired` if it holds `expected`; 1 when it did.
int phi_cpu_atomic_exchange_if(uint32_t *word, uint32_t expected, uint32_t desired);
/// Spins (with pause) while *word == value, for about spin_ns nanoseconds (yielding the core now
/// and then after the first 20 µs); returns *word last seen.
uint32_t phi_cpu_spin_while_equal(const uint32_t *word, uint32_t value, uint64_t spin_ns);
/// Sleeps while *word == value (a futex on Linux), counted in *sleepers meanwhile.
void phi_cpu_park_while_equal(uint32_t *word, uint32_t value, uint32_t *sleepers);
/// Increments *word and wakes its parked waiters when *sleepers is not 0; returns the new value.
uint32_t phi_cpu_publish(uint32_t *word, const uint32_t *sleepers);
/// Subtracts `count` from *word; the subtraction that reaches 0 wakes its parked waiters.
void phi_cpu_finish(uint32_t *word, uint32_t count, const uint32_t *sleepers);
/// Returns once *word is 0: spins for up to spin_ns after each change, then parks.
void phi_cpu_wait_until_zero(uint32_t *word, uint32_t *sleepers, uint64_t spin_ns);

#endif
