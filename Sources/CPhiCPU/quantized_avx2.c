// AVX2 quantized matrix products over MLX affine groups: see include/CPhiCPU.h.
#include "CPhiCPU.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define KERNEL __attribute__((target("avx2,fma,f16c")))

int phi_cpu_has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

// Scales of the 8 lanes (words) of block `block`: one group, or one group per few lanes.
KERNEL static inline __m256 lane_scales(const uint16_t *row_scales, int block, int per_word, int group_size) {
    int block_elements = 8 * per_word;
    if (group_size >= block_elements) {
        return _mm256_set1_ps(_cvtsh_ss(row_scales[block * block_elements / group_size]));
    }
    uint16_t lanes[8];
    for (int k = 0; k < 8; k++) lanes[k] = row_scales[(block * block_elements + k * per_word) / group_size];
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)lanes));
}

KERNEL static inline float horizontal_sum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// sum_g bias[g] * group_sums[g]
KERNEL static inline float bias_term(const uint16_t *row_biases, const float *sums, int groups) {
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

#define TILE 4

// Rows times up to TILE tokens with the unpack of each block shared by the tokens; BITS is constant.
#define DEFINE_ROWS(BITS)                                                                                  \
KERNEL static void rows_##BITS(const uint32_t *words, const uint16_t *scales, const uint16_t *biases,     \
                               int words_per_row, int groups_per_row, int group_size,                     \
                               const float *xp, const float *sums, int tokens, int columns,               \
                               int row_start, int row_end, float *out, int out_stride) {                  \
    const int per_word = 32 / BITS, block_elements = 8 * per_word, blocks = words_per_row / 8;            \
    const __m256i mask = _mm256_set1_epi32((1 << BITS) - 1);                                              \
    for (int r = row_start; r < row_end; r++) {                                                           \
        const uint32_t *row_words = words + (long)r * words_per_row;                                     \
        const uint16_t *row_scales = scales + (long)r * groups_per_row;                                  \
        const uint16_t *row_biases = biases + (long)r * groups_per_row;                                  \
        for (int t = 0; t < tokens; t += TILE) {                                                         \
            int n = tokens - t < TILE ? tokens - t : TILE;                                               \
            const float *x[TILE];                                                                        \
            __m256 a[TILE];                                                                              \
            for (int i = 0; i < TILE; i++) {                                                             \
                x[i] = xp + (long)(t + (i < n ? i : 0)) * columns;                                       \
                a[i] = _mm256_setzero_ps();                                                              \
            }                                                                                            \
            for (int b = 0; b < blocks; b++) {                                                           \
                __m256i w = _mm256_loadu_si256((const __m256i *)(row_words + b * 8));                    \
                __m256 s = lane_scales(row_scales, b, per_word, group_size);                             \
                int o = b * block_elements;                                                              \
                if (n == 1) {                                                                            \
                    __m256 block_sum = _mm256_setzero_ps();                                              \
                    for (int j = 0; j < per_word; j++) {                                                 \
                        __m256 q = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(w, j * BITS), mask)); \
                        block_sum = _mm256_fmadd_ps(q, _mm256_loadu_ps(x[0] + o + j * 8), block_sum);    \
                    }                                                                                    \
                    a[0] = _mm256_fmadd_ps(block_sum, s, a[0]);                                          \
                } else {                                                                                 \
                    for (int j = 0; j < per_word; j++) {                                                 \
                        __m256 q = _mm256_mul_ps(_mm256_cvtepi32_ps(                                     \
                            _mm256_and_si256(_mm256_srli_epi32(w, j * BITS), mask)), s);                 \
                        for (int i = 0; i < TILE; i++) {                                                 \
                            a[i] = _mm256_fmadd_ps(q, _mm256_loadu_ps(x[i] + o + j * 8), a[i]);          \
                        }                                                                                \
                    }                                                                                    \
                }                                                                                        \
            }                                                                                            \
            for (int i = 0; i < n; i++) {                                                                \
                out[(long)(t + i) * out_stride + r] = horizontal_sum(a[i])                               \
                    + bias_term(row_biases, sums + (long)(t + i) * groups_per_row, groups_per_row);      \
            }                                                                                            \
        }                                                                                                \
    }                                                                                                    \
}

DEFINE_ROWS(4)
DEFINE_ROWS(8)

void phi_cpu_quantized_matmul_avx2(const uint32_t *words, const uint16_t *scales, const uint16_t *biases,
                                   int words_per_row, int groups_per_row, int group_size, int bits,
                                   const float *x_permuted, const float *group_sums, int tokens, int columns,
                                   int row_start, int row_end, float *out, int out_stride) {
    if (bits == 4) {
        rows_4(words, scales, biases, words_per_row, groups_per_row, group_size, x_permuted, group_sums, tokens,
               columns, row_start, row_end, out, out_stride);
    } else {
        rows_8(words, scales, biases, words_per_row, groups_per_row, group_size, x_permuted, group_sums, tokens,
               columns, row_start, row_end, out, out_stride);
    }
}

#else
int phi_cpu_has_avx2(void) { return 0; }
void phi_cpu_quantized_matmul_avx2(const uint32_t *words, const uint16_t *scales, const uint16_t *biases,
                                   int words_per_row, int groups_per_row, int group_size, int bits,
                                   const float *x_permuted, const float *group_sums, int tokens, int columns,
                                   int row_start, int row_end, float *out, int out_stride) {}
#endif
