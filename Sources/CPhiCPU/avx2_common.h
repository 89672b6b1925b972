// Helpers shared by the AVX2 float kernels and the int16 kernels (x86-64 only, internal).
#ifndef CPHICPU_AVX2_COMMON_H
#define CPHICPU_AVX2_COMMON_H

#include <immintrin.h>
#include <stdint.h>

#define AVX2_TARGET __attribute__((target("avx2,fma,f16c")))

AVX2_TARGET static inline float horizontal_sum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// sum_g bias[g] * sums[g]: the affine bias term of one row and one token (exact float group sums).
AVX2_TARGET static inline float bias_term(const uint16_t *row_biases, const float *sums, int groups) {
    __m256 acc = _mm256_setzero_ps();
    int g = 0;
    for (; g + 8 <= groups; g += 8) {
        __m256 b = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row_biases + g)));
        acc = _mm256_fmadd_ps(b, _mm256_loadu_ps(sums + g), acc);
    }
    float total = horizontal_sum(acc);
    for (; g < groups; g++) total += _cvtsh_ss(row_biases[g]) * sums[g];
    return total;
}

#endif
