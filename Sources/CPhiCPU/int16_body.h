// The int16 product kernels, written once over a vector width and included by each ISA's file
// (quantized_int16.c: AVX2, 8-word blocks; quantized_vnni.c: AVX-512 VNNI, 16-word blocks).
// The includer defines TARGET, WORDS (32-bit words per block), TILE_ROWS, TILE_TOKENS, NAME(x),
// the types ivec/fvec and these helpers:
//   ivec load_words(const uint32_t *p)        WORDS packed words
//   ivec load_x(const int16_t *p)             2 * WORDS int16 values of x
//   ivec lane_mask(int bits)                   (1 << bits) - 1 in every 16-bit lane
//   ivec unpack(ivec w, int shift, ivec mask, int last)  (w >> shift) & mask in 16-bit lanes
//                                              (no mask for the top element: last)
//   ivec dot(ivec acc, ivec q, ivec x)        acc + pairwise q * x, in 32-bit lanes (one per word)
//   ivec combine(ivec hi, ivec lo)            (hi << LO_BITS) + lo, in 32-bit lanes
//   fvec spread_f16(const uint16_t *p, const struct spread *s)  per-word-lane values of a block's groups
//   fvec spread_f32(const float *p, const struct spread *s)
//   float sum_lanes(fvec v), izero, fzero, fmadd, fmul, to_float, and make_spread (struct spread)
// x comes in two int16 parts per element (x / scale = hi + lo / 2^LO_BITS, see
// phi_cpu_quantize_int16): each unpacked weight vector meets both, and the two integer sums are
// combined once per block, so x keeps ~20 bits (the float kernel's accuracy) at twice the dots.
// In a block, 16-bit lane l holds elements l * E .. l * E + E - 1 (E = 16 / bits), so one shift
// and mask yields element j of every lane; x is laid out to match (phi_cpu_quantize_int16).
// Each 32-bit lane of a dot is one word, which lies inside one group: after a block, the lane
// sums are converted to float once and scaled by weight scale * x scale of their group.

// Products of rows [row_start, row_end) of BITS-bit weights with every token of p.
TARGET __attribute__((always_inline)) static inline void NAME(rows)(const struct int16_problem *p, int bits,
                                                                     int row_start, int row_end) {
    const int e = 16 / bits, block_elements = WORDS * 2 * e, blocks = p->words_per_row / WORDS;
    const int groups = p->groups_per_row;
    const ivec mask = lane_mask(bits);
    struct spread sp;
    make_spread(&sp, block_elements, p->group_size);
    if (p->tokens == 1) {
        for (int r = row_start; r < row_end; r++) {
            const uint32_t *row_words = p->words + (long)r * p->words_per_row;  // (words_per_row)
            const uint16_t *row_scales = p->scales + (long)r * groups;           // (groups)
            fvec acc = fzero();
            for (int b = 0; b < blocks; b++) {
                const ivec w = load_words(row_words + b * WORDS);
                const int16_t *x = p->xq + 2 * b * block_elements;  // hi (block_elements), then lo
                ivec hi = izero(), lo = izero();
                for (int j = 0; j < e; j++) {
                    const ivec q = unpack(w, j * bits, mask, j == e - 1);
                    hi = dot(hi, q, load_x(x + j * 2 * WORDS));
                    lo = dot(lo, q, load_x(x + block_elements + j * 2 * WORDS));
                }
                const ivec s = combine(hi, lo);
                const int g = b * block_elements / p->group_size;
                acc = fmadd(to_float(s), fmul(spread_f16(row_scales + g, &sp), spread_f32(p->x_scales + g, &sp)), acc);
            }
            p->out[r] = sum_lanes(acc) + bias_term(p->biases + (long)r * groups, p->sums, groups);
        }
        return;
    }
    // Prompt: TILE_ROWS rows x TILE_TOKENS tokens per pass; each unpacked weight vector is used
    // TILE_TOKENS times and each x vector TILE_ROWS times from registers.
    for (int r = row_start; r < row_end; r += TILE_ROWS) {
        const int m = row_end - r < TILE_ROWS ? row_end - r : TILE_ROWS;
        const uint32_t *row_words[TILE_ROWS];  // each (words_per_row); rows past the end repeat row r
        const uint16_t *row_scales[TILE_ROWS]; // each (groups)
        for (int k = 0; k < TILE_ROWS; k++) {
            const long row = r + (k < m ? k : 0);
            row_words[k] = p->words + row * p->words_per_row;
            row_scales[k] = p->scales + row * groups;
        }
        for (int t = 0; t < p->tokens; t += TILE_TOKENS) {
            const int n = p->tokens - t < TILE_TOKENS ? p->tokens - t : TILE_TOKENS;
            const int16_t *x[TILE_TOKENS];   // each (2 * columns); tokens past the end repeat token t
            const float *xs[TILE_TOKENS];    // each (groups)
            fvec acc[TILE_ROWS][TILE_TOKENS];
            for (int i = 0; i < TILE_TOKENS; i++) {
                const long token = t + (i < n ? i : 0);
                x[i] = p->xq + token * 2 * p->columns;
                xs[i] = p->x_scales + token * groups;
                for (int k = 0; k < TILE_ROWS; k++) acc[k][i] = fzero();
            }
            for (int b = 0; b < blocks; b++) {
                ivec w[TILE_ROWS], s[TILE_ROWS][TILE_TOKENS];
                for (int k = 0; k < TILE_ROWS; k++) {
                    w[k] = load_words(row_words[k] + b * WORDS);
                    for (int i = 0; i < TILE_TOKENS; i++) s[k][i] = izero();
                }
                const int o = 2 * b * block_elements;
                // The hi parts, then (sums shifted) the lo parts into the same accumulators.
                for (int part = 0; part < 2; part++) {
                    if (part == 1) {
                        for (int k = 0; k < TILE_ROWS; k++) {
                            for (int i = 0; i < TILE_TOKENS; i++) s[k][i] = combine(s[k][i], izero());
                        }
                    }
                    for (int j = 0; j < e; j++) {
                        ivec q[TILE_ROWS];
                        for (int k = 0; k < TILE_ROWS; k++) q[k] = unpack(w[k], j * bits, mask, j == e - 1);
                        for (int i = 0; i < TILE_TOKENS; i++) {
                            const ivec xv = load_x(x[i] + o + part * block_elements + j * 2 * WORDS);
                            for (int k = 0; k < TILE_ROWS; k++) s[k][i] = dot(s[k][i], q[k], xv);
                        }
                    }
                }
                const int g = b * block_elements / p->group_size;
                fvec ws[TILE_ROWS];
                for (int k = 0; k < TILE_ROWS; k++) ws[k] = spread_f16(row_scales[k] + g, &sp);
                for (int i = 0; i < TILE_TOKENS; i++) {
                    const fvec xsv = spread_f32(xs[i] + g, &sp);
                    for (int k = 0; k < TILE_ROWS; k++) acc[k][i] = fmadd(to_float(s[k][i]), fmul(ws[k], xsv), acc[k][i]);
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
    NAME(rows)(p, 4, row_start, row_end);
}

TARGET static void NAME(rows_8)(const struct int16_problem *p, int row_start, int row_end) {
    NAME(rows)(p, 8, row_start, row_end);
}
