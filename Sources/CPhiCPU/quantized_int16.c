// Integer products with quantized activations: x as int16 with one float scale per group, the
// weights' 4/8-bit values used as they are (no int->float conversion), one float conversion per
// block. This file: x's quantization, dispatch, and the AVX2 kernel (_mm256_madd_epi16, 8-word
// blocks). quantized_vnni.c: the AVX-512 VNNI kernel.
#include "CPhiCPU.h"

#if defined(__x86_64__)
#include "int16_common.h"
#include <string.h>

int phi_cpu_int16_supported(int kernel) {
    __builtin_cpu_init();
    if (!phi_cpu_has_avx2()) return 0;
    if (kernel == PHI_CPU_INT16_AVX2) return 1;
    if (kernel == PHI_CPU_INT16_VNNI) {
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
            && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    }
    return 0;
}

int phi_cpu_int16_block_words(int kernel) { return kernel == PHI_CPU_INT16_VNNI ? 16 : 8; }

void phi_cpu_quantize_int16(const float *x, int x_stride, int tokens, int columns, int group_size, int bits,
                            int block_words, int16_t *xq, float *x_scales, float *group_sums) {
    const int e = 16 / bits, lanes = 2 * block_words, block_elements = lanes * e;
    const int groups = columns / group_size;
    for (int t = 0; t < tokens; t++) {
        const float *source = x + (long)t * x_stride;   // (columns)
        int16_t *target = xq + (long)t * 2 * columns;   // (2 * columns)
        float *scales = x_scales + (long)t * groups;    // (groups)
        float *sums = group_sums + (long)t * groups;    // (groups)
        for (int g = 0; g < groups; g++) {
            float sum = 0, largest = 0;
            for (int c = g * group_size; c < (g + 1) * group_size; c++) {
                sum += source[c];
                const float a = source[c] < 0 ? -source[c] : source[c];
                largest = a > largest ? a : largest;
            }
            sums[g] = sum;
            scales[g] = largest / 32767.0f;
        }
        for (int start = 0; start < columns; start += block_elements) {
            int16_t *hi = target + 2 * start, *lo = hi + block_elements;  // each (block_elements)
            for (int l = 0; l < lanes; l++) {
                const int first = start + l * e;  // a lane's E elements share a group
                const float scale = scales[first / group_size];
                const float inverse = scale > 0 ? 1.0f / scale : 0.0f;
                for (int j = 0; j < e; j++) {
                    const float v = source[first + j] * inverse;            // |v| <= 32767 (+ rounding)
                    const float h = (float)(int)(v + (v < 0 ? -0.5f : 0.5f));
                    const float r = (v - h) * (1 << LO_BITS);               // |r| <= 2^(LO_BITS - 1)
                    hi[j * lanes + l] = (int16_t)h;
                    lo[j * lanes + l] = (int16_t)(r + (r < 0 ? -0.5f : 0.5f));
                }
            }
        }
    }
}

void phi_cpu_quantized_matmul_int16(int kernel, const uint32_t *words, const uint16_t *scales,
                                    const uint16_t *biases, int words_per_row, int groups_per_row, int group_size,
                                    int bits, const int16_t *xq, const float *x_scales, const float *group_sums,
                                    int tokens, int columns, int row_start, int row_end, float *out, int out_stride) {
    const struct int16_problem p = {words, scales, biases, words_per_row, groups_per_row, group_size,
                                    xq, x_scales, group_sums, tokens, columns, out, out_stride};
    if (kernel == PHI_CPU_INT16_VNNI) {
        phi_cpu_int16_rows_vnni(&p, bits, row_start, row_end);
    } else {
        phi_cpu_int16_rows_avx2(&p, bits, row_start, row_end);
    }
}

// ---- The AVX2 instantiation of int16_body.h: 8-word (256-bit) blocks. ----
#define TARGET AVX2_TARGET
#define WORDS 8
#define TILE_ROWS 2
#define DECODE_ROWS 1
#define TILE_TOKENS 2
#define NAME(x) avx2_##x
typedef __m256i ivec;
typedef __m256 fvec;

// How a block's groups map onto its 8 word lanes: one group (groups == 1), or `groups` of them.
struct spread {
    int groups;
    __m256i index;  // lane k takes value k * groups / 8
    __m256i mask;   // the first `groups` lanes
};

static void make_spread(struct spread *s, int block_elements, int group_size) {
    s->groups = group_size >= block_elements ? 1 : block_elements / group_size;
    int index[8], mask[8];
    for (int k = 0; k < 8; k++) {
        index[k] = k * s->groups / 8;
        mask[k] = k < s->groups ? -1 : 0;
    }
    memcpy(&s->index, index, sizeof index);
    memcpy(&s->mask, mask, sizeof mask);
}

TARGET static inline ivec izero(void) { return _mm256_setzero_si256(); }
TARGET static inline fvec fzero(void) { return _mm256_setzero_ps(); }
TARGET static inline fvec fset1(float v) { return _mm256_set1_ps(v); }
TARGET static inline fvec fmadd(fvec a, fvec b, fvec c) { return _mm256_fmadd_ps(a, b, c); }
TARGET static inline fvec fmul(fvec a, fvec b) { return _mm256_mul_ps(a, b); }
TARGET static inline fvec to_float(ivec v) { return _mm256_cvtepi32_ps(v); }
TARGET static inline float sum_lanes(fvec v) { return horizontal_sum(v); }
TARGET static inline ivec load_words(const uint32_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
TARGET static inline ivec load_x(const int16_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
TARGET static inline ivec dot(ivec acc, ivec q, ivec x) { return _mm256_add_epi32(acc, _mm256_madd_epi16(q, x)); }

TARGET static inline ivec lane_mask(int bits) { return _mm256_set1_epi16((short)((1 << bits) - 1)); }
TARGET static inline ivec unpack(ivec w, int shift, ivec mask, int last) {
    const ivec shifted = _mm256_srli_epi16(w, shift);
    return last ? shifted : _mm256_and_si256(shifted, mask);
}

TARGET static inline fvec spread_f16(const uint16_t *p, const struct spread *s) {
    if (s->groups == 1) return _mm256_set1_ps(_cvtsh_ss(*p));
    __m128i h;  // exactly s->groups values are read: they all exist
    if (s->groups == 2) {
        uint32_t two;
        memcpy(&two, p, sizeof two);
        h = _mm_cvtsi32_si128((int)two);
    } else if (s->groups == 4) {
        h = _mm_loadl_epi64((const __m128i *)p);
    } else {
        h = _mm_loadu_si128((const __m128i *)p);
    }
    return _mm256_permutevar8x32_ps(_mm256_cvtph_ps(h), s->index);
}

TARGET static inline fvec spread_f32(const float *p, const struct spread *s) {
    if (s->groups == 1) return _mm256_broadcast_ss(p);
    return _mm256_permutevar8x32_ps(_mm256_maskload_ps(p, s->mask), s->index);
}

#include "int16_body.h"

void phi_cpu_int16_rows_avx2(const struct int16_problem *p, int bits, int row_start, int row_end) {
    if (bits == 4) avx2_rows_4(p, row_start, row_end); else avx2_rows_8(p, row_start, row_end);
}

#else
int phi_cpu_int16_supported(int kernel) { return 0; }
int phi_cpu_int16_block_words(int kernel) { return 8; }
void phi_cpu_quantize_int16(const float *x, int x_stride, int tokens, int columns, int group_size, int bits,
                            int block_words, int16_t *xq, float *x_scales, float *group_sums) {}
void phi_cpu_quantized_matmul_int16(int kernel, const uint32_t *words, const uint16_t *scales,
                                    const uint16_t *biases, int words_per_row, int groups_per_row, int group_size,
                                    int bits, const int16_t *xq, const float *x_scales, const float *group_sums,
                                    int tokens, int columns, int row_start, int row_end, float *out, int out_stride) {}
#endif
