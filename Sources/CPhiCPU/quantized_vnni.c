// The AVX-512 VNNI instantiation of int16_body.h: 16-word (512-bit) blocks, _mm512_dpwssd_epi32
// (32 int16 multiply-adds accumulated into 16 int32 lanes per instruction). Chosen at run time
// where the CPU has AVX-512 F/BW/VL and VNNI (phi_cpu_int16_supported).
#include "CPhiCPU.h"

#if defined(__x86_64__)
#include "int16_common.h"
#include <string.h>

#define TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define WORDS 16
#define TILE_ROWS 2
#define DECODE_ROWS 1
#define TILE_TOKENS 4
#define NAME(x) vnni_##x
typedef __m512i ivec;
typedef __m512 fvec;

// How a block's groups map onto its 16 word lanes: one group (groups == 1), or `groups` of them.
struct spread {
    int groups;
    __mmask16 mask;  // the first `groups` lanes
    __m512i index;   // lane k takes value k * groups / 16
};

static void make_spread(struct spread *s, int block_elements, int group_size) {
    s->groups = group_size >= block_elements ? 1 : block_elements / group_size;
    s->mask = (__mmask16)((1u << s->groups) - 1);
    int index[16];
    for (int k = 0; k < 16; k++) index[k] = k * s->groups / 16;
    memcpy(&s->index, index, sizeof index);
}

TARGET static inline ivec izero(void) { return _mm512_setzero_si512(); }
TARGET static inline fvec fzero(void) { return _mm512_setzero_ps(); }
TARGET static inline fvec fset1(float v) { return _mm512_set1_ps(v); }
TARGET static inline fvec fmadd(fvec a, fvec b, fvec c) { return _mm512_fmadd_ps(a, b, c); }
TARGET static inline fvec fmul(fvec a, fvec b) { return _mm512_mul_ps(a, b); }
TARGET static inline fvec to_float(ivec v) { return _mm512_cvtepi32_ps(v); }
TARGET static inline float sum_lanes(fvec v) { return _mm512_reduce_add_ps(v); }
TARGET static inline ivec load_words(const uint32_t *p) { return _mm512_loadu_si512(p); }
TARGET static inline ivec load_x(const int16_t *p) { return _mm512_loadu_si512(p); }
TARGET static inline ivec dot(ivec acc, ivec q, ivec x) { return _mm512_dpwssd_epi32(acc, q, x); }
TARGET static inline ivec lane_mask(int bits) { return _mm512_set1_epi16((short)((1 << bits) - 1)); }

TARGET static inline ivec unpack(ivec w, int shift, ivec mask, int last) {
    const ivec shifted = _mm512_srli_epi16(w, (unsigned)shift);
    return last ? shifted : _mm512_and_si512(shifted, mask);
}

TARGET static inline fvec spread_f16(const uint16_t *p, const struct spread *s) {
    if (s->groups == 1) return _mm512_set1_ps(_cvtsh_ss(*p));
    // Masked load: reads exactly s->groups values, all of which exist.
    return _mm512_permutexvar_ps(s->index, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(s->mask, p)));
}

TARGET static inline fvec spread_f32(const float *p, const struct spread *s) {
    if (s->groups == 1) return _mm512_set1_ps(*p);
    return _mm512_permutexvar_ps(s->index, _mm512_maskz_loadu_ps(s->mask, p));
}

#include "int16_body.h"

void phi_cpu_int16_rows_vnni(const struct int16_problem *p, int bits, int row_start, int row_end) {
    if (bits == 4) vnni_rows_4(p, row_start, row_end); else vnni_rows_8(p, row_start, row_end);
}
#endif
