// AVX2 quantized matrix products over MLX affine groups: see include/CPhiCPU.h.
#include "CPhiCPU.h"

#if defined(__x86_64__)
#include "avx2_common.h"
#define KERNEL AVX2_TARGET

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

#define TILE_ROWS 2   // rows per pass of a prompt batch: each x load feeds this many rows
#define TILE_TOKENS 4 // tokens per pass: each unpacked block feeds this many tokens

// One token (decode): rows one at a time, the scale applied once per block.
// A few tokens (2 to PANEL_MIN_TOKENS - 1; longer prompts take panel_rows below): TILE_ROWS rows ×
// TILE_TOKENS tokens per pass, so that each unpacked weight vector is used TILE_TOKENS times and
// each x vector TILE_ROWS times from registers.
#define DEFINE_ROWS(BITS)                                                                                  \
KERNEL static void rows_##BITS(const uint32_t *words, const uint16_t *scales, const uint16_t *biases,     \
                               int words_per_row, int groups_per_row, int group_size,                     \
                               const float *xp, const float *sums, int tokens, int columns,               \
                               int row_start, int row_end, float *out, int out_stride) {                  \
    const int per_word = 32 / BITS, block_elements = 8 * per_word, blocks = words_per_row / 8;            \
    const __m256i mask = _mm256_set1_epi32((1 << BITS) - 1);                                              \
    if (tokens == 1) {                                                                                    \
        for (int r = row_start; r < row_end; r++) {                                                       \
            const uint32_t *row_words = words + (long)r * words_per_row;                                 \
            const uint16_t *row_scales = scales + (long)r * groups_per_row;                              \
            __m256 a = _mm256_setzero_ps();                                                               \
            for (int b = 0; b < blocks; b++) {                                                            \
                __m256i w = _mm256_loadu_si256((const __m256i *)(row_words + b * 8));                     \
                const float *x = xp + b * block_elements;                                                 \
                __m256 block_sum = _mm256_setzero_ps();                                                   \
                for (int j = 0; j < per_word; j++) {                                                      \
                    __m256 q = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(w, j * BITS), mask));\
                    block_sum = _mm256_fmadd_ps(q, _mm256_loadu_ps(x + j * 8), block_sum);                \
                }                                                                                         \
                a = _mm256_fmadd_ps(block_sum, lane_scales(row_scales, b, per_word, group_size), a);      \
            }                                                                                             \
            out[r] = horizontal_sum(a) + bias_term(biases + (long)r * groups_per_row, sums, groups_per_row);\
        }                                                                                                 \
        return;                                                                                           \
    }                                                                                                     \
    for (int r = row_start; r < row_end; r += TILE_ROWS) {                                                \
        const int m = row_end - r < TILE_ROWS ? row_end - r : TILE_ROWS;                                  \
        const uint32_t *row_words[TILE_ROWS];                                                             \
        const uint16_t *row_scales[TILE_ROWS];                                                            \
        for (int k = 0; k < TILE_ROWS; k++) {                                                             \
            const long row = r + (k < m ? k : 0);                                                         \
            row_words[k] = words + row * words_per_row;                                                   \
            row_scales[k] = scales + row * groups_per_row;                                                \
        }                                                                                                 \
        for (int t = 0; t < tokens; t += TILE_TOKENS) {                                                   \
            const int n = tokens - t < TILE_TOKENS ? tokens - t : TILE_TOKENS;                            \
            const float *x[TILE_TOKENS];                                                                  \
            __m256 a[TILE_ROWS][TILE_TOKENS];                                                             \
            for (int i = 0; i < TILE_TOKENS; i++) {                                                       \
                x[i] = xp + (long)(t + (i < n ? i : 0)) * columns;                                        \
                for (int k = 0; k < TILE_ROWS; k++) a[k][i] = _mm256_setzero_ps();                        \
            }                                                                                             \
            for (int b = 0; b < blocks; b++) {                                                            \
                __m256i w[TILE_ROWS];                                                                     \
                __m256 s[TILE_ROWS];                                                                      \
                for (int k = 0; k < TILE_ROWS; k++) {                                                     \
                    w[k] = _mm256_loadu_si256((const __m256i *)(row_words[k] + b * 8));                   \
                    s[k] = lane_scales(row_scales[k], b, per_word, group_size);                           \
                }                                                                                         \
                const int o = b * block_elements;                                                         \
                for (int j = 0; j < per_word; j++) {                                                      \
                    __m256 q[TILE_ROWS];                                                                  \
                    for (int k = 0; k < TILE_ROWS; k++) {                                                 \
                        q[k] = _mm256_mul_ps(_mm256_cvtepi32_ps(                                          \
                            _mm256_and_si256(_mm256_srli_epi32(w[k], j * BITS), mask)), s[k]);            \
                    }                                                                                     \
                    for (int i = 0; i < TILE_TOKENS; i++) {                                               \
                        const __m256 xv = _mm256_loadu_ps(x[i] + o + j * 8);                              \
                        for (int k = 0; k < TILE_ROWS; k++) a[k][i] = _mm256_fmadd_ps(q[k], xv, a[k][i]); \
                    }                                                                                     \
                }                                                                                         \
            }                                                                                             \
            for (int k = 0; k < m; k++) {                                                                 \
                for (int i = 0; i < n; i++) {                                                             \
                    out[(long)(t + i) * out_stride + r + k] = horizontal_sum(a[k][i])                     \
                        + bias_term(biases + (long)(r + k) * groups_per_row,                              \
                                    sums + (long)(t + i) * groups_per_row, groups_per_row);               \
                }                                                                                         \
            }                                                                                             \
        }                                                                                                 \
    }                                                                                                     \
}

DEFINE_ROWS(4)
DEFINE_ROWS(8)

// Prompt batches: the weights of PANEL_ROWS rows × PANEL_COLUMNS columns are dequantized once
// (scale and bias applied: s·q + b) into a float panel in L1, then a plain float product runs
// over it for every token, MICRO_ROWS rows × MICRO_TOKENS tokens of accumulators in registers.
// The unpacking is paid once per weight instead of once per weight and token tile.
#define PANEL_ROWS 12       // rows of one panel (12 × 512 floats: 24 KiB of the 32 KiB L1)
#define PANEL_COLUMNS 512   // columns of one panel: a multiple of the 4- and 8-bit blocks (64, 32)
#define MICRO_ROWS 3        // rows × tokens of accumulators: 12 of the 16 ymm registers
#define MICRO_TOKENS 4      // micro_tile's hadd reduction is written for 4
#define PANEL_MIN_TOKENS 5  // fewer tokens take the tiled path (the panel's unpacking would not pay)

// Dequantizes blocks [first_block, first_block + blocks) of one row into target, in x_permuted's order.
#define DEFINE_DEQUANTIZE(BITS)                                                                            \
KERNEL static void dequantize_##BITS(const uint32_t *row_words, const uint16_t *row_scales,              \
                                     const uint16_t *row_biases, int group_size, int first_block,         \
                                     int blocks, float *target) {                                         \
    const int per_word = 32 / BITS, block_elements = 8 * per_word;                                        \
    const __m256i mask = _mm256_set1_epi32((1 << BITS) - 1);                                              \
    for (int b = 0; b < blocks; b++) {                                                                    \
        const int block = first_block + b;                                                                \
        const __m256i w = _mm256_loadu_si256((const __m256i *)(row_words + block * 8));                   \
        const __m256 s = lane_scales(row_scales, block, per_word, group_size);                            \
        const __m256 z = lane_scales(row_biases, block, per_word, group_size);                            \
        for (int j = 0; j < per_word; j++) {                                                              \
            const __m256 q = _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(w, j * BITS), mask));  \
            _mm256_store_ps(target + b * block_elements + j * 8, _mm256_fmadd_ps(q, s, z));               \
        }                                                                                                 \
    }                                                                                                     \
}

DEFINE_DEQUANTIZE(4)
DEFINE_DEQUANTIZE(8)

_Static_assert(MICRO_TOKENS == 4, "micro_tile reduces 4 tokens a row with hadd");

// sums[k][i] = w[k] · x[i] over `length` floats (a multiple of 8): MICRO_ROWS × MICRO_TOKENS dot
// products, each row's 4 token sums reduced together with hadd. w: panel rows (32-byte aligned).
KERNEL static inline void micro_tile(const float *const w[MICRO_ROWS], const float *const x[MICRO_TOKENS],
                                     int length, float sums[MICRO_ROWS][MICRO_TOKENS]) {
    __m256 a[MICRO_ROWS][MICRO_TOKENS];
    for (int k = 0; k < MICRO_ROWS; k++) {
        for (int i = 0; i < MICRO_TOKENS; i++) a[k][i] = _mm256_setzero_ps();
    }
    for (int c = 0; c < length; c += 8) {
        __m256 wv[MICRO_ROWS];
        for (int k = 0; k < MICRO_ROWS; k++) wv[k] = _mm256_load_ps(w[k] + c);
        for (int i = 0; i < MICRO_TOKENS; i++) {
            const __m256 xv = _mm256_loadu_ps(x[i] + c);
            for (int k = 0; k < MICRO_ROWS; k++) a[k][i] = _mm256_fmadd_ps(wv[k], xv, a[k][i]);
        }
    }
    for (int k = 0; k < MICRO_ROWS; k++) {
        const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a[k][0], a[k][1]), _mm256_hadd_ps(a[k][2], a[k][3]));
        _mm_storeu_ps(sums[k], _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
    }
}

// The panel path of phi_cpu_quantized_matmul_avx2 for rows [row_start, row_end) and every token:
// per panel, each chunk of columns is dequantized, then multiplied with every token's x chunk
// (which stays in L1 across the panel's rows); chunks after the first add to out.
// The bias is in the panel's weights, so group_sums is not needed here.
KERNEL static void panel_rows(const uint32_t *words, const uint16_t *scales, const uint16_t *biases,
                              int words_per_row, int groups_per_row, int group_size, int bits,
                              const float *xp, int tokens, int columns, int row_start, int row_end,
                              float *out, int out_stride) {
    float panel[PANEL_ROWS * PANEL_COLUMNS] __attribute__((aligned(32)));  // (PANEL_ROWS, PANEL_COLUMNS)
    const int block_elements = 8 * (32 / bits);
    for (int r0 = row_start; r0 < row_end; r0 += PANEL_ROWS) {
        const int m = row_end - r0 < PANEL_ROWS ? row_end - r0 : PANEL_ROWS;
        for (int c0 = 0; c0 < columns; c0 += PANEL_COLUMNS) {
            const int length = columns - c0 < PANEL_COLUMNS ? columns - c0 : PANEL_COLUMNS;
            for (int k = 0; k < m; k++) {
                const long row = r0 + k;
                if (bits == 4) {
                    dequantize_4(words + row * words_per_row, scales + row * groups_per_row,
                                 biases + row * groups_per_row, group_size, c0 / block_elements,
                                 length / block_elements, panel + k * PANEL_COLUMNS);
                } else {
                    dequantize_8(words + row * words_per_row, scales + row * groups_per_row,
                                 biases + row * groups_per_row, group_size, c0 / block_elements,
                                 length / block_elements, panel + k * PANEL_COLUMNS);
                }
            }
            for (int t = 0; t < tokens; t += MICRO_TOKENS) {
                const int n = tokens - t < MICRO_TOKENS ? tokens - t : MICRO_TOKENS;
                const float *x[MICRO_TOKENS];
                for (int i = 0; i < MICRO_TOKENS; i++) x[i] = xp + (long)(t + (i < n ? i : 0)) * columns + c0;
                for (int k0 = 0; k0 < m; k0 += MICRO_ROWS) {
                    const int mr = m - k0 < MICRO_ROWS ? m - k0 : MICRO_ROWS;
                    const float *w[MICRO_ROWS];
                    for (int k = 0; k < MICRO_ROWS; k++) w[k] = panel + (k0 + (k < mr ? k : 0)) * PANEL_COLUMNS;
                    float sums[MICRO_ROWS][MICRO_TOKENS];
                    micro_tile(w, x, length, sums);
                    for (int i = 0; i < n; i++) {
                        float *o = out + (long)(t + i) * out_stride + r0 + k0;
                        for (int k = 0; k < mr; k++) o[k] = c0 == 0 ? sums[k][i] : o[k] + sums[k][i];
                    }
                }
            }
        }
    }
}

void phi_cpu_quantized_matmul_avx2(const uint32_t *words, const uint16_t *scales, const uint16_t *biases,
                                   int words_per_row, int groups_per_row, int group_size, int bits,
                                   const float *x_permuted, const float *group_sums, int tokens, int columns,
                                   int row_start, int row_end, float *out, int out_stride) {
    if (tokens >= PANEL_MIN_TOKENS) {
        panel_rows(words, scales, biases, words_per_row, groups_per_row, group_size, bits, x_permuted, tokens,
                   columns, row_start, row_end, out, out_stride);
    } else if (bits == 4) {
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
