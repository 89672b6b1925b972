// The int16 product kernels, written once over a vector width and included by each ISA's file
// (quantized_int16.c: AVX2, 8-word blocks; quantized_vnni.c: AVX-512 VNNI, 16-word blocks).
// The includer defines TARGET, WORDS (32-bit words per block), NAME(x), the tiles (TILE_ROWS x
// TILE_TOKENS for several tokens, DECODE_ROWS x 1 for one),
// the types ivec/fvec and these helpers:
//   ivec load_words(const uint32_t *p)        WORDS packed words
//   ivec load_x(const int16_t *p)             2 * WORDS int16 values of x
//   ivec lane_mask(int bits)                   (1 << bits) - 1 in every 16-bit lane
//   ivec unpack(ivec w, int shift, ivec mask, int last)  (w >> shift) & mask in 16-bit lanes
//                                              (no mask for the top element: last)
//   ivec dot(ivec acc, ivec q, ivec x)        acc + pairwise q * x, in 32-bit lanes (one per word)
//   fvec spread_f16(const uint16_t *p, const struct spread *s)  per-word-lane values of a block's groups
//   fvec spread_f32(const float *p, const struct spread *s)
//   float sum_lanes(fvec v), izero, fzero, fset1, fmadd, fmul, to_float, and make_spread (struct spread)
// x comes in two int16 parts per element (x / scale = hi + lo / 2^LO_BITS, see
// phi_cpu_quantize_int16): each unpacked weight vector meets both, and each integer sum is
// converted once per block, so x keeps ~30 bits (beyond the float kernel's accuracy) at twice the dots.
// In a block, 16-bit lane l holds elements l * E .. l * E + E - 1 (E = 16 / bits), so one shift
// and mask yields element j of every lane; x is laid out to match (phi_cpu_quantize_int16).
// Each 32-bit lane of a dot is one word, which lies inside one group: after a block, the lane
// sums are converted to float once and scaled by weight scale * x scale of their group.

// The weights are one stream (rows follow each other in memory): each block asks for the cache line
// PREFETCH_BYTES ahead of it, so that enough of the stream is on its way while one core works
// through a row. Measured on the GPU machine's 16 cores, tg16 of Phi-3.5-mini-shaped 4-bit
// weights (BENCHMARKS.md, sixth session): 25.3-27.5 t/s without, 31-36 with 3-12 KB ahead.
#define PREFETCH_BYTES 4096

// Products of rows [row_start, row_end) of `bits`-bit weights with every token of p, in tiles of
// `tile_rows` rows x `tile_tokens` tokens (constants after inlining, at most MAX_TILE each): each
// unpacked weight vector is used tile_tokens times and each x vector tile_rows times from registers.
#define MAX_TILE 4

TARGET __attribute__((always_inline)) static inline void NAME(rows)(const struct int16_problem *p, int bits,
                                                                     int tile_rows, int tile_tokens,
                                                                     int row_start, int row_end) {
    const int e = 16 / bits, block_elements = WORDS * 2 * e, blocks = p->words_per_row / WORDS;
    const int groups = p->groups_per_row;
    const ivec mask = lane_mask(bits);
    const fvec lo_weight = fset1(1.0f / (1 << LO_BITS));
    struct spread sp;
    make_spread(&sp, block_elements, p->group_size);
    for (int r = row_start; r < row_end; r += tile_rows) {
        const int m = row_end - r < tile_rows ? row_end - r : tile_rows;
        const uint32_t *row_words[MAX_TILE];  // each (words_per_row); rows past the end repeat row r
        const uint16_t *row_scales[MAX_TILE]; // each (groups)
        for (int k = 0; k < tile_rows; k++) {
            const long row = r + (k < m ? k : 0);
            row_words[k] = p->words + row * p->words_per_row;
            row_scales[k] = p->scales + row * groups;
        }
        for (int t = 0; t < p->tokens; t += tile_tokens) {
            const int n = p->tokens - t < tile_tokens ? p->tokens - t : tile_tokens;
            long x_offset[MAX_TILE];       // token i's x at xq + x_offset[i]; tokens past the end repeat t
            const float *xs[MAX_TILE];    // each (groups)
            fvec acc[MAX_TILE][MAX_TILE];
            for (int i = 0; i < tile_tokens; i++) {
                const long token = t + (i < n ? i : 0);
                x_offset[i] = token * 2 * p->columns;
                xs[i] = p->x_scales + token * groups;
                for (int k = 0; k < tile_rows; k++) acc[k][i] = fzero();
            }
            for (int b = 0; b < blocks; b++) {
                if ((b * WORDS * 4) % 64 == 0) {  // once per 64-byte line
                    for (int k = 0; k < tile_rows; k++) {
                        _mm_prefetch((const char *)(row_words[k] + b * WORDS) + PREFETCH_BYTES, _MM_HINT_T0);
                    }
                }
                ivec w[MAX_TILE];
                fvec ws[MAX_TILE];
                const int g = b * block_elements / p->group_size;
                for (int k = 0; k < tile_rows; k++) {
                    w[k] = load_words(row_words[k] + b * WORDS);
                    ws[k] = spread_f16(row_scales[k] + g, &sp);
                }
                // Integer sums of the hi and the lo parts, each converted once, combined, then scaled.
                const int16_t *block_x = p->xq + 2 * b * block_elements;  // hi (block_elements), then lo
                ivec hi[MAX_TILE][MAX_TILE], lo[MAX_TILE][MAX_TILE];
                for (int k = 0; k < tile_rows; k++) {
                    for (int i = 0; i < tile_tokens; i++) hi[k][i] = lo[k][i] = izero();
                }
                for (int j = 0; j < e; j++) {
                    ivec q[MAX_TILE];
                    for (int k = 0; k < tile_rows; k++) q[k] = unpack(w[k], j * bits, mask, j == e - 1);
                    for (int i = 0; i < tile_tokens; i++) {
                        const ivec xh = load_x(block_x + x_offset[i] + j * 2 * WORDS);
                        const ivec xl = load_x(block_x + x_offset[i] + block_elements + j * 2 * WORDS);
                        for (int k = 0; k < tile_rows; k++) {
                            hi[k][i] = dot(hi[k][i], q[k], xh);
                            lo[k][i] = dot(lo[k][i], q[k], xl);
                        }
                    }
                }
                for (int i = 0; i < tile_tokens; i++) {
                    const fvec xsv = spread_f32(xs[i] + g, &sp);
                    for (int k = 0; k < tile_rows; k++) {
                        const fvec sum = fmadd(to_float(lo[k][i]), lo_weight, to_float(hi[k][i]));
                        acc[k][i] = fmadd(sum, fmul(ws[k], xsv), acc[k][i]);
                    }
                }
            }
            for (int k = 0; k < m; k++) {
                for (int i = 0; i < n; i++) {
                    p->out[(long)(t + i) * p->out_stride + r + k] = sum_lanes(acc[k][i])
                        + bias_term(p->biases + (long)(r + k) * groups, p->sums + (long)(t + i) * groups, groups);
                }
            }
        }
    }
}

TARGET static void NAME(rows_4)(const struct int16_problem *p, int row_start, int row_end) {
    if (p->tokens == 1) NAME(rows)(p, 4, DECODE_ROWS, 1, row_start, row_end);
    else NAME(rows)(p, 4, TILE_ROWS, TILE_TOKENS, row_start, row_end);
}

TARGET static void NAME(rows_8)(const struct int16_problem *p, int row_start, int row_end) {
    if (p->tokens == 1) NAME(rows)(p, 8, DECODE_ROWS, 1, row_start, row_end);
    else NAME(rows)(p, 8, TILE_ROWS, TILE_TOKENS, row_start, row_end);
}
