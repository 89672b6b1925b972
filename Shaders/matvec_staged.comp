#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_shuffle : require
#ifdef INT_DOT
#extension GL_EXT_spirv_intrinsics : require
#endif
// Decode product y[r] = Σ_c W[r, c] · x[c] for one token, W quantized (BITS-bit affine groups),
// with x staged in shared memory.
// Each workgroup first copies x (CHUNK columns at a time) into shared memory, padded by 16 bytes
// per block so that lanes reading neighbouring blocks hit distinct banks, together with each
// block's Σ x for the affine bias term: one vec4 per invocation, the lanes of a block finding its
// Σ x and largest |x| with shuffles (one block per invocation, 32 values in a row, made decode 3%
// slower on an H200). Each subgroup then computes ROWS rows in rounds: every lane
// loads UNROLL 16-byte blocks of each row, reads each block's x from shared memory once into
// registers and uses it for all ROWS rows. (Requesting each round's weights before computing the
// one before, double-buffered in registers, measured 10% slower on an H200: 318 against 350 t/s.)
// 4-bit weights are multiplied in Float16 pairs (the arithmetic per value would otherwise cost as
// much time as reading it): (word & 0x000F000F) | 0x64006400 read as two Float16 is 1024 plus the
// values at bits 0 and 16, exact, so one AND-OR, one subtraction (of 1032: values centred on 0)
// and one fma take two values; the mask 0x00F000F0 gives 1024 plus 16 times the values at bits 4
// and 20, and word >> 8 the other four. x is
// staged as the matching Float16 pairs, divided by 16 where the value comes scaled, and by a power
// of two per block (`block_scale`) that brings its largest |x| into (16, 32], so that every pair
// sum of a word stays below 4,000 and small x keeps Float16's precision; each word's sum goes to
// Float32. Relative error ≈ 3e-4 of the largest output (Float16 x, as in prefill).
// With INT_DOT (devices with integer dot products) weights are multiplied in integers instead:
// x is staged per block as x / block_scale = hi + lo / 256 in signed bytes (block_scale = the
// block's largest |x| / 127, so ~16 bits of x are kept), and each word takes two ANDs, a shift and
// four 4-way signed × unsigned byte dot products (OpSUDot) into exact int32 sums (8-bit words: two
// dots, no unpacking). 4-bit: 5-10% faster decode products than Float16 pairs on an H200, and ~20
// times closer to the CPU (2e-5 of the largest output).
// 8-bit weights are unpacked in Float32 with one AND-OR per value: (word & mask) | 0x4B000000 read
// as a float is 2^23 plus the value times 2^e, so the staged x is pre-multiplied by 2^-e.
// Prologues fuse the operation that produced x into the staging, so that it needs no dispatch of
// its own (the x computed is also written, by workgroup 0 for PROLOGUE_SILU and by the first
// workgroups, a vec4 an invocation, for PROLOGUE_NORM, so the result is the same as unfused):
//   PROLOGUE_NORM: x = RMSNorm(input row) · norm_weight (needs columns <= CHUNK; the norm's scale
//                  multiplies the results instead of x)
//   PROLOGUE_SILU: x = silu(gate) · up, the input row being gate | up (2 · columns values)
// With ACCUMULATE the result is also added into `accumulator` (the residual add fused).
// Products wider than one chunk may be split over their chunks (see PartSums below), so that the
// few row blocks of a wide matrix (down: 96 workgroups on an H200's 132 SMs) fill the GPU.
// Needs columns a multiple of BLOCK_VALUES and group_size a multiple of BLOCK_VALUES.
#include "common.glsl"
#include "quantized.glsl"

layout(constant_id = 1) const uint ROWS = 4;    // rows per subgroup
layout(constant_id = 2) const uint UNROLL = 2;  // blocks per row and lane loaded before any is used
#ifndef CHUNK
#define CHUNK 4096 // columns of x staged at a time
#endif
#define BLOCK_VALUES (4 * VALUES_PER_WORD)  // values in one 16-byte block: 32 (4-bit) or 16 (8-bit)
#define BLOCK_VEC4 (BLOCK_VALUES / 4)        // vec4s of x per block
#define CHUNK_BLOCKS (CHUNK / BLOCK_VALUES)

#include "matvec_io.glsl"

#if defined(PROLOGUE_NORM) || defined(PROLOGUE_SILU)
layout(std430, binding = 6) readonly buffer NormWeight { vec4 norm_weight[]; };     // (columns) Float32, PROLOGUE_NORM
layout(std430, binding = 7) writeonly buffer PrologueOutput { vec4 prologue_out[]; }; // (tokens, columns) x as computed
#endif

#if BITS == 8 && defined(INT_DOT)
#define STAGED_PER_BLOCK 3                           // uvec4s: two for the block's words, one of padding
shared uvec4 staged[CHUNK_BLOCKS * STAGED_PER_BLOCK]; // (chunk blocks, 3) signed bytes of x / block_scale
shared vec2 block_info[CHUNK_BLOCKS];                 // (chunk blocks) (Σ x, block_scale)
#elif BITS == 4
#define STAGED_PER_BLOCK 5                           // uvec4s: one per word of the block, one of padding
shared uvec4 staged[CHUNK_BLOCKS * STAGED_PER_BLOCK]; // (chunk blocks, 5) Float16 x pairs / block_scale
shared vec2 block_info[CHUNK_BLOCKS];                 // (chunk blocks) (Σ x, block_scale)
#else
#define STAGED_PER_BLOCK (BLOCK_VEC4 + 1)            // vec4s: the block's x and one of padding
shared vec4 staged[CHUNK_BLOCKS * STAGED_PER_BLOCK];  // (chunk blocks, BLOCK_VEC4 + 1) x · 2^-e
shared vec2 block_info[CHUNK_BLOCKS];                 // (chunk blocks) (Σ x, 1)
#endif
shared float subgroup_sums[64];                       // (subgroups) Σ x² for PROLOGUE_NORM
shared bool is_last_part;                             // this workgroup finished its rows' parts last

// Split over the chunks (gl_NumWorkGroups.y parts; not with PROLOGUE_NORM): workgroup (x, part)
// computes chunks part, part + parts, ... of its rows, leaves its sums in `part_sums`, and the last
// of a row block's parts to finish (an atomic count) adds them up and writes the results.
layout(std430, binding = 8) coherent buffer PartSums { float part_sums[]; };    // (parts, rows) partial sums
layout(std430, binding = 9) coherent buffer PartCounts { uint parts_done[]; };  // (row blocks) parts finished, 0 between dispatches

#ifdef INT_DOT
// OpSUDot (SPV_KHR_integer_dot_product; Debian 12's glslang has no GLSL name for it): the sum of
// the four products of the signed bytes of `a` and the unsigned bytes of `b` (format 0: packed 4x8).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4452)
int signed_unsigned_dot(uint a, uint b, spirv_literal uint format);

#define CENTRE 0.0  // integer sums are exact: no centring needed

// Four values of x / block_scale (each at most 127 in magnitude) as hi + lo / 256: the signed
// bytes of hi, then of lo. packSnorm4x8 stores round(clamp(c, -1, 1) · 127) in the bytes of c; it
// made decode 1.6% faster on an H200 than rounding, clamping and packing by hand.
uvec2 high_low_bytes(vec4 v) {
    const vec4 high = round(v);
    return uvec2(packSnorm4x8(high * (1.0 / 127.0)), packSnorm4x8((v - high) * (256.0 / 127.0)));
}
#endif

#if BITS == 8 && defined(INT_DOT)
// Σ over one 16-byte block of q · x / x_scale, xs being the block's staged x: (hi, lo) of word 0,
// then of word 1, in the first uvec4, words 2 and 3 in the second; x / x_scale = hi + lo / 256.
// The weights' bytes are the values as they are: two dots a word, no unpacking.
float block_dot(uvec4 block, uvec4 xs[2]) {
    int high = 0, low = 0;
    [[unroll]] for (uint j = 0; j < 4; ++j) {
        const uvec4 pairs = xs[j / 2];
        high += signed_unsigned_dot(j % 2 == 0 ? pairs.x : pairs.z, block[j], 0);
        low += signed_unsigned_dot(j % 2 == 0 ? pairs.y : pairs.w, block[j], 0);
    }
    return float(high) + float(low) * (1.0 / 256.0);
}
#elif BITS == 4 && defined(INT_DOT)

// Σ over one 16-byte block of q · x / x_scale, xs being the block's staged int8 x: per word j,
// (hi of values 8j, 8j+2, 8j+4, 8j+6; hi of the odd ones; lo of the even ones; lo of the odd ones),
// x / x_scale = hi + lo / 256. w & 0x0F0F0F0F holds the even values of a word, one per byte, and
// (w >> 4) & 0x0F0F0F0F the odd ones, so each word takes two ANDs, a shift and four dots.
float block_dot(uvec4 block, uvec4 xs[4]) {
    int high = 0, low = 0;
    [[unroll]] for (uint j = 0; j < 4; ++j) {
        const uint even = block[j] & 0x0F0F0F0Fu, odd = (block[j] >> 4) & 0x0F0F0F0Fu;
        high += signed_unsigned_dot(xs[j].x, even, 0) + signed_unsigned_dot(xs[j].y, odd, 0);
        low += signed_unsigned_dot(xs[j].z, even, 0) + signed_unsigned_dot(xs[j].w, odd, 0);
    }
    return float(high) + float(low) * (1.0 / 256.0);
}
#elif BITS == 4
// The two values of (w & mask) minus 8, as Float16 (times 16 for the mask 0x00F000F0): centred,
// so that the Float16 sums stay small next to the result (whose bias term cancels the mean of q).
#define HALF_PAIR(w, mask) (unpackFloat2x16(((w) & (mask)) | 0x64006400u) \
                            - ((mask) == 0x000F000Fu ? f16vec2(1032.0hf) : f16vec2(1152.0hf)))
#define CENTRE 8.0  // the value HALF_PAIR subtracts from q

// Σ over one 16-byte block of (q - 8) · x / block_scale, xs being the block's staged pairs.
float block_dot(uvec4 block, uvec4 xs[4]) {
    float total = 0.0;
    [[unroll]] for (uint j = 0; j < 4; ++j) {
        const uint w = block[j];
        const uint h = w >> 8;
        f16vec2 pair_sums = HALF_PAIR(w, 0x000F000Fu) * unpackFloat2x16(xs[j].x);
        pair_sums = fma(HALF_PAIR(w, 0x00F000F0u), unpackFloat2x16(xs[j].y), pair_sums);
        pair_sums = fma(HALF_PAIR(h, 0x000F000Fu), unpackFloat2x16(xs[j].z), pair_sums);
        pair_sums = fma(HALF_PAIR(h, 0x00F000F0u), unpackFloat2x16(xs[j].w), pair_sums);
        const vec2 sums = vec2(pair_sums);
        total += sums.x + sums.y;
    }
    return total;
}
#else
#define CENTRE 0.0  // 8-bit values are not centred
#define MAGIC 0x4B000000u
#define UNPACK(w, m) (uintBitsToFloat(((w) & (m)) | MAGIC) - 8388608.0)

// Σ over one 16-byte block of q · x, xs being the block's staged values (x · 2^-e, e the position
// of the value's bits: the high bytes are taken from word >> 16).
float block_dot(uvec4 block, vec4 xs[BLOCK_VEC4]) {
    float total = 0.0;
    [[unroll]] for (uint j = 0; j < 4; ++j) {
        const uint w = block[j];
        const uint h = w >> 16;  // bytes 2-3 at bits 0-15
        const vec4 q = vec4(UNPACK(w, 0xFFu), UNPACK(w, 0xFF00u), UNPACK(h, 0xFFu), UNPACK(h, 0xFF00u));
        total += dot(q, xs[j]);
    }
    return total;
}
#endif

// The Σ and the largest of `sum` and `largest` over the BLOCK_VEC4 neighbouring lanes that hold
// one block of x (a butterfly of shuffles; the subgroup size is a multiple of BLOCK_VEC4).
vec2 block_sum_and_largest(float sum, float largest) {
    [[unroll]] for (uint mask = 1; mask < BLOCK_VEC4; mask *= 2) {
        sum += subgroupShuffleXor(sum, mask);
        largest = max(largest, subgroupShuffleXor(largest, mask));
    }
    return vec2(sum, largest);
}

// Loads round `base` of the lane's blocks: block base + u · subgroup size of each of the ROWS rows
// (clamped to the row's last block; past the end they are loaded, not used) and the (scale, bias)
// of each block's group.
#define LOAD_ROUND(base, blocks, factors)                                                         \
    [[unroll]] for (uint u = 0; u < UNROLL; ++u) {                                               \
        const uint k = min((base) + u * gl_SubgroupSize, blocks_per_row - 1);                     \
        const uint group = k / blocks_per_group;                                                 \
        [[unroll]] for (uint r = 0; r < ROWS; ++r) {                                             \
            const uint row = min(first_row + r, pc.rows - 1); /* past the last row: not written */ \
            blocks[u][r] = packed[row * blocks_per_row + k];                                     \
            const uint g = row * groups_per_row + group;                                         \
            factors[u][r] = vec2(HALF_AT(scales, g), HALF_AT(biases, g));                        \
        }                                                                                        \
    }

void main() {
    const uint first_row = (gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID) * ROWS;
    const uint blocks_per_row = pc.columns / BLOCK_VALUES;
    const uint groups_per_row = pc.columns / pc.group_size;
    const uint blocks_per_group = pc.group_size / BLOCK_VALUES;
    const uint columns4 = pc.columns / 4;
    const uint lane = gl_SubgroupInvocationID;
    const uint round_blocks = UNROLL * gl_SubgroupSize;  // blocks of a row one round of the subgroup covers
#ifdef PROLOGUE_SILU
    const uint x_base = pc.input_row * 2 * columns4;  // in vec4s: gate at x_base, up at x_base + columns4
#else
    const uint x_base = pc.input_row * columns4;      // in vec4s
#endif
#ifdef PROLOGUE_SILU
    const bool writes_prologue = gl_WorkGroupID.x == 0;  // writes the x it computes
#endif
#ifdef PROLOGUE_NORM
    // RMSNorm's scale multiplies the results rather than x: Σ x² is gathered while x is staged and
    // added up after the staging barrier, so no pass over x and no barrier come before the staging.
    float squares = 0.0, norm_scale = 1.0;
#endif
    float sums[ROWS];
    [[unroll]] for (uint r = 0; r < ROWS; ++r) {
        sums[r] = 0.0;
    }
    const uint part = gl_WorkGroupID.y, parts = gl_NumWorkGroups.y;
    for (uint chunk = part * CHUNK_BLOCKS; chunk < blocks_per_row; chunk += parts * CHUNK_BLOCKS) {
        const uint chunk_blocks = min(uint(CHUNK_BLOCKS), blocks_per_row - chunk);
        barrier();  // the previous chunk is no longer read
        // One vec4 of x per invocation (after the prologue), the BLOCK_VEC4 neighbouring lanes of a
        // block finding its Σ x and largest |x| together, then each block scaled and stored.
        const uint chunk_vec4s = chunk_blocks * BLOCK_VEC4;
        for (uint first = 0; first < chunk_vec4s; first += gl_WorkGroupSize.x) {  // uniform: every lane shuffles
            const uint c = first + gl_SubgroupID * gl_SubgroupSize + lane;  // vec4 number within the chunk
            const bool inside = c < chunk_vec4s;
            const uint b = c / BLOCK_VEC4, i = c % BLOCK_VEC4;  // block within the chunk, vec4 within the block
            const uint v = chunk * BLOCK_VEC4 + c;             // vec4 number within the row
            vec4 value = vec4(0.0);
            if (inside) {
#if defined(PROLOGUE_NORM)
                const vec4 raw = x[x_base + v];
                squares += dot(raw, raw);
                value = raw * norm_weight[v];  // times norm_scale in the results
#elif defined(PROLOGUE_SILU)
                const vec4 gate = x[x_base + v];
                value = gate / (1.0 + exp(-gate)) * x[x_base + columns4 + v];
                if (writes_prologue) {
                    prologue_out[pc.input_row * columns4 + v] = value;
                }
#else
                value = x[x_base + v];
#endif
            }
            const vec4 magnitude = abs(value);
            const vec2 block = block_sum_and_largest(value.x + value.y + value.z + value.w,
                                                     max(max(magnitude.x, magnitude.y), max(magnitude.z, magnitude.w)));
#if defined(INT_DOT)
            // x / block_scale as hi + lo / 256 in signed bytes, block_scale = largest / 127.
            const float block_scale = block.y > 0.0 ? block.y / 127.0 : 1.0;
            const vec4 scaled = value * (1.0 / block_scale);
#if BITS == 8
            // Four values (one word's) to a uint: (hi, lo) of word 2j, then of word 2j + 1.
            const uvec2 bytes = high_low_bytes(scaled);
            if (inside && i % 2 == 0) {
                staged[b * STAGED_PER_BLOCK + i / 2].xy = bytes;
            } else if (inside) {
                staged[b * STAGED_PER_BLOCK + i / 2].zw = bytes;
            }
#else
            // Word j holds values 8j ... 8j + 7, vec4s 2j and 2j + 1 (neighbouring lanes): the even
            // and the odd values apart, (hi even, hi odd, lo even, lo odd).
            const vec4 second = subgroupShuffleXor(scaled, 1);
            if (inside && i % 2 == 0) {
                const uvec2 even = high_low_bytes(vec4(scaled.x, scaled.z, second.x, second.z));
                const uvec2 odd = high_low_bytes(vec4(scaled.y, scaled.w, second.y, second.w));
                staged[b * STAGED_PER_BLOCK + i / 2] = uvec4(even.x, odd.x, even.y, odd.y);
            }
#endif
#elif BITS == 4
            // Word j holds values 8j ... 8j + 7, vec4s 2j and 2j + 1 (neighbouring lanes); its
            // pairs are values (8j + i, 8j + 4 + i), those with odd i divided by 16 (see block_dot).
            const float block_scale = block.y > 0.0 ? exp2(ceil(log2(block.y / 32.0))) : 1.0;
            const vec4 low = value * (1.0 / block_scale);
            const vec4 high = subgroupShuffleXor(low, 1);
            if (inside && i % 2 == 0) {
                staged[b * STAGED_PER_BLOCK + i / 2] = uvec4(
                    packFloat2x16(f16vec2(low.x, high.x)), packFloat2x16(f16vec2(vec2(low.y, high.y) * (1.0 / 16.0))),
                    packFloat2x16(f16vec2(low.z, high.z)), packFloat2x16(f16vec2(vec2(low.w, high.w) * (1.0 / 16.0))));
            }
#else
            const float block_scale = 1.0;
            if (inside) {
                staged[b * STAGED_PER_BLOCK + i] = value * vec4(1.0, 1.0 / 256.0, 1.0, 1.0 / 256.0);
            }
#endif
            if (inside && i == 0) {
                block_info[b] = vec2(block.x, block_scale);
            }
        }
#ifdef PROLOGUE_NORM
        const float subgroup_squares = subgroupAdd(squares);
        if (subgroupElect()) {
            subgroup_sums[gl_SubgroupID] = subgroup_squares;
        }
#endif
        barrier();
#ifdef PROLOGUE_NORM
        float total_squares = 0.0;
        for (uint s = 0; s < gl_NumSubgroups; ++s) {
            total_squares += subgroup_sums[s];
        }
        norm_scale = inversesqrt(total_squares / float(pc.columns) + pc.epsilon);
#endif
        for (uint k0 = 0; k0 < chunk_blocks; k0 += round_blocks) {  // k0: the round's first block within the chunk
            uvec4 blocks[UNROLL][ROWS];
            vec2 factors[UNROLL][ROWS];  // (scale, bias) of each block's group
            LOAD_ROUND(chunk + k0 + lane, blocks, factors)
            [[unroll]] for (uint u = 0; u < UNROLL; ++u) {
                const uint k = k0 + lane + u * gl_SubgroupSize;
                if (k < chunk_blocks) {
#if BITS == 8 && defined(INT_DOT)
                    uvec4 xs[2];
#elif BITS == 4
                    uvec4 xs[4];
#else
                    vec4 xs[BLOCK_VEC4];
#endif
                    [[unroll]] for (uint i = 0; i < xs.length(); ++i) {
                        xs[i] = staged[k * STAGED_PER_BLOCK + i];
                    }
                    const vec2 info = block_info[k];  // (Σ x, block_scale)
                    [[unroll]] for (uint r = 0; r < ROWS; ++r) {
                        // scale · q + bias = scale · (q - CENTRE) + (bias + CENTRE · scale)
                        const vec2 f = factors[u][r];
                        sums[r] += f.x * info.y * block_dot(blocks[u][r], xs) + fma(CENTRE, f.x, f.y) * info.x;
                    }
                }
            }
        }
    }
    // Each row's sum is its result, or with parts this part's share, for the last part to add up.
    [[unroll]] for (uint r = 0; r < ROWS; ++r) {
#ifdef PROLOGUE_NORM
        const float total = subgroupAdd(sums[r]) * norm_scale;
#else
        const float total = subgroupAdd(sums[r]);
#endif
        if (subgroupElect() && first_row + r < pc.rows) {
            if (parts == 1) {
                y[first_row + r] = total;
#ifdef ACCUMULATE
                accumulator[first_row + r] += total;
#endif
            } else {
                part_sums[part * pc.rows + first_row + r] = total;
            }
        }
    }
#ifdef PROLOGUE_NORM
    // The normalised x, as the unfused RMSNorm writes it, one vec4 per invocation from workgroup 0 on.
    for (uint v = gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationIndex; v < columns4;
         v += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        prologue_out[pc.input_row * columns4 + v] = x[x_base + v] * norm_scale * norm_weight[v];
    }
#endif
    if (parts == 1) {
        return;
    }
    memoryBarrierBuffer();
    barrier();
    if (gl_LocalInvocationIndex == 0) {
        is_last_part = atomicAdd(parts_done[gl_WorkGroupID.x], 1u) == parts - 1;
    }
    barrier();
    if (!is_last_part) {
        return;
    }
    memoryBarrierBuffer();
    const uint block_rows = gl_NumSubgroups * ROWS;
    for (uint i = gl_LocalInvocationIndex; i < block_rows; i += gl_WorkGroupSize.x) {
        const uint row = gl_WorkGroupID.x * block_rows + i;
        if (row < pc.rows) {
            float total = 0.0;
            for (uint p = 0; p < parts; ++p) {
                total += part_sums[p * pc.rows + row];
            }
            y[row] = total;
#ifdef ACCUMULATE
            accumulator[row] += total;
#endif
        }
    }
    if (gl_LocalInvocationIndex == 0) {
        parts_done[gl_WorkGroupID.x] = 0u;
    }
}
