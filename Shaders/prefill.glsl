// Shared by the tiled prefill products (matmul_tiled.comp, matmul_coopmat.comp): the bindings and
// push constants of every product (the same as matmul.comp's), and reading W and x a tile at a time.
// A workgroup computes out[token0 .. token0 + TILE_TOKENS, row0 .. row0 + TILE_ROWS] and walks the
// columns TILE_K at a time; each step's words of W and vec4s of x are loaded into registers
// ("staged") while the previous step is computed, then written to shared memory by the kernel.
// Reads outside W and x give zeros, so the edges of the last tiles need no other care.
#include "quantized.glsl"

#ifdef X_F16
layout(std430, binding = 0) readonly buffer Input { uvec4 x[]; };      // (tokens, columns / 8) Float16: x converted (x_to_half)
#else
layout(std430, binding = 0) readonly buffer Input { vec4 x[]; };       // (tokens, columns) Float32
#endif
layout(std430, binding = 1) readonly buffer Packed { uint packed[]; }; // (rows, columns · BITS / 32)
layout(std430, binding = 2) readonly buffer Scales { uint scales[]; }; // (rows, columns / group) Float16 pairs
layout(std430, binding = 3) readonly buffer Biases { uint biases[]; }; // (rows, columns / group) Float16 pairs
layout(std430, binding = 4) writeonly buffer Output { float y[]; };    // (tokens, outputStride)

layout(push_constant) uniform MatmulConstants {
    uint rows;          // output features
    uint columns;       // input features, a multiple of VALUES_PER_WORD
    uint tokens;        // rows of x to multiply
    uint input_row;     // first row of x used
    uint group_size;
    uint output_stride; // floats between output rows (≥ rows)
} pc;

// Parts the product is split into over its columns (gl_NumWorkGroups.z): a constant, so that the
// unsplit kernels keep their column loops as they were (a runtime split cost qkv 341 against 295 µs).
layout(constant_id = 0) const uint PARTS = 1;

// This workgroup's share of the columns, [k_begin, k_end), and where its part of y starts: part z
// of PARTS takes the z-th share of whole steps (a step being TILE_K columns or a group, whichever is
// larger: the caller makes the columns a multiple of it), ceil(steps / PARTS) steps each, so that
// the last parts may have fewer or none (their sums are then zeros), and writes its partial sums to
// the z-th (tokens, output_stride) block of y.
struct ColumnShare {
    uint k_begin;
    uint k_end;
    uint y_offset;
};

ColumnShare column_share() {
    if (PARTS == 1) {
        return ColumnShare(0, pc.columns, 0);
    }
    const uint part = gl_WorkGroupID.z;
    const uint step = max(uint(TILE_K), pc.group_size);
    const uint part_columns = (pc.columns / step + PARTS - 1) / PARTS * step;
    const uint k_begin = min(part * part_columns, pc.columns);
    return ColumnShare(k_begin, min(k_begin + part_columns, pc.columns), part * pc.tokens * pc.output_stride);
}

#define WORDS_PER_TILE_ROW (TILE_K / VALUES_PER_WORD)
// Words of W and vec4s of x each invocation stages per step in the Float32 tiles (they divide
// evenly; checked below). The cooperative kernel stages its own way.
#define WORD_LOADS (TILE_ROWS * WORDS_PER_TILE_ROW / THREADS)
#define X_LOADS (TILE_TOKENS * TILE_K / 4 / THREADS)
#if !defined(X_F16) && (WORD_LOADS * THREADS != TILE_ROWS * WORDS_PER_TILE_ROW || X_LOADS * THREADS * 4 != TILE_TOKENS * TILE_K)
#error "a tile's words of W and vec4s of x must divide evenly among the invocations"
#endif

// One packed word of W with its group's scale and bias (a word never spans two groups, since the
// group size is a multiple of VALUES_PER_WORD).
struct StagedWord {
    uint bits;
    float scale;
    float bias;
};

// Word `word` of W's row `row`; zeros outside W.
StagedWord load_word(uint row, uint word) {
    const uint words_per_row = pc.columns / VALUES_PER_WORD;
    if (row >= pc.rows || word >= words_per_row) {
        return StagedWord(0u, 0.0, 0.0);
    }
    const uint group = row * (pc.columns / pc.group_size) + word * VALUES_PER_WORD / pc.group_size;
    return StagedWord(packed[row * words_per_row + word], HALF_AT(scales, group), HALF_AT(biases, group));
}

// Value `j` of a staged word, dequantized: scale · q + bias (zero outside W, where all three are 0).
float dequantized(StagedWord w, uint j) {
    return w.scale * float((w.bits >> (BITS * j)) & VALUE_MASK) + w.bias;
}

#ifdef X_F16
// Columns 8·chunk ..< 8·chunk + 8 of token `token` of this product, Float16; zeros outside x.
uvec4 load_x(uint token, uint chunk) {
    if (token >= pc.tokens || chunk >= pc.columns / 8) {
        return uvec4(0u);
    }
    return x[(pc.input_row + token) * (pc.columns / 8) + chunk];
}
#else
// Columns 4·quad ..< 4·quad + 4 of token `token` of this product; zeros outside x.
vec4 load_x(uint token, uint quad) {
    if (token >= pc.tokens || quad >= pc.columns / 4) {
        return vec4(0.0);
    }
    return x[(pc.input_row + token) * (pc.columns / 4) + quad];
}

// Invocation `tid`'s share of the step at column `k0`: its words of W and its vec4s of x, in the
// order the kernels' store loops expect (index tid + i · THREADS, rows and tokens outermost).
void stage_tiles(uint tid, uint row0, uint token0, uint k0, out StagedWord words[WORD_LOADS], out vec4 xs[X_LOADS]) {
    for (uint i = 0; i < WORD_LOADS; ++i) {
        const uint index = tid + i * THREADS;
        words[i] = load_word(row0 + index / WORDS_PER_TILE_ROW, k0 / VALUES_PER_WORD + index % WORDS_PER_TILE_ROW);
    }
    for (uint i = 0; i < X_LOADS; ++i) {
        const uint index = tid + i * THREADS;
        xs[i] = load_x(token0 + index / (TILE_K / 4), k0 / 4 + index % (TILE_K / 4));
    }
}
#endif
