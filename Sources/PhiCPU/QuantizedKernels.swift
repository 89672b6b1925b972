import Foundation
import PhiFormats
#if canImport(CPhiCPU)
import CPhiCPU
#endif

/// SIMD products with a `QuantizedMatrix` straight from its packed words (no dequantized copy).
///
/// A row is read in blocks of 8 words. Lane `k` of a block holds word `k`, whose `32 / bits`
/// elements are consecutive, so one shift-and-mask of the block yields elements `k × perWord + j`
/// for all 8 lanes. `x` is permuted once per call to match (`PermutedInput`), the affine bias
/// term uses per-group sums of `x`: Σ (s·q + b)·x = Σ s·(q·x) + Σ b·(Σ x).
enum QuantizedKernels {
    /// Which implementation computes the products.
    enum Implementation: CaseIterable {
        /// Portable Swift SIMD (baseline x86-64 or ARM code).
        case swiftSIMD
        /// The C AVX2/FMA/F16C float kernels of CPhiCPU, where the target is built and the CPU has them.
        case avx2
        /// x quantized per group to two int16 parts (hi + lo / 32768), integer dot products with
        /// `_mm256_madd_epi16` (AVX2).
        case int16AVX2
        /// As `int16AVX2` with AVX-512 VNNI (`_mm512_dpwssd_epi32`, 16-word blocks).
        case int16VNNI
    }

    /// The implementations this build and CPU can run (for tests and benchmarks).
    static let available: [Implementation] = Implementation.allCases.filter { implementation in
        #if canImport(CPhiCPU)
        switch implementation {
        case .swiftSIMD: return true
        case .avx2: return phi_cpu_has_avx2() != 0
        case .int16AVX2: return phi_cpu_int16_supported(Int32(PHI_CPU_INT16_AVX2)) != 0
        case .int16VNNI: return phi_cpu_int16_supported(Int32(PHI_CPU_INT16_VNNI)) != 0
        }
        #else
        return implementation == .swiftSIMD
        #endif
    }

    /// The fastest float kernel and the fastest int16 kernel (or that float one) this build and CPU offer.
    static let bestFloat: Implementation = available.contains(.avx2) ? .avx2 : .swiftSIMD
    static let bestInt16: Implementation = available.last { $0 == .int16VNNI || $0 == .int16AVX2 } ?? bestFloat

    /// `PHI_CPU_KERNEL=swift|float|int16` (read once; for benchmarks) forces one kind for every product.
    static let forced: Implementation? = {
        switch getenv("PHI_CPU_KERNEL").map({ String(cString: $0) }) {
        case "swift": return .swiftSIMD
        case "float": return bestFloat
        case "int16": return bestInt16
        default: return nil
        }
    }()

    /// The kernel for a product of `tokens` tokens: int16 for one token (decode: one pass over the
    /// weights, where its 2-4x fewer instructions per weight pay), the float kernel for several
    /// (measured faster there on Zen 4: the int16 kernels do two integer dots per product, hi and lo).
    static func implementation(tokens: Int) -> Implementation {
        forced ?? (tokens == 1 ? bestInt16 : bestFloat)
    }

    /// Whether the SIMD path reads `matrix`; others take the plain dequantize-and-dot path.
    static func hasSIMDPath(_ matrix: QuantizedMatrix) -> Bool {
        (matrix.bits == 4 || matrix.bits == 8) && matrix.columns % (256 / matrix.bits) == 0
            && matrix.groupSize % (32 / matrix.bits) == 0
    }

    /// Rows of one thread's share start at multiples of this: 16 floats of output, one cache line.
    static let rowGranularity = 16

    /// out[t × outStride + r] = Σ_c W[r, c] · x[t × xStride + c], for t in 0..<tokens, r in 0..<rows.
    static func matmul(_ matrix: QuantizedMatrix, x: UnsafePointer<Float>, xStride: Int, tokens: Int,
                       out: UnsafeMutablePointer<Float>, outStride: Int, pool: WorkerPool,
                       implementation chosen: Implementation? = nil) {
        guard tokens > 0 else { return }
        let implementation = chosen ?? self.implementation(tokens: tokens)
        guard hasSIMDPath(matrix) else {
            plainMatmul(matrix, x: x, xStride: xStride, tokens: tokens, out: out, outStride: outStride, pool: pool)
            return
        }
        #if canImport(CPhiCPU)
        if let kernel = int16Kernel(implementation, matrix: matrix) {
            int16Matmul(matrix, kernel: kernel, x: x, xStride: xStride, tokens: tokens, out: out,
                        outStride: outStride, pool: pool)
            return
        }
        #endif
        let input = PermutedInput(matrix: matrix, x: x, xStride: xStride, tokens: tokens)
        let operand = Operand(matrix)
        withExtendedLifetime(matrix) {
            pool.parallelRanges(matrix.rows, minimumPerTask: 8, granularity: rowGranularity) { rows in
                #if canImport(CPhiCPU)
                if implementation != .swiftSIMD {
                    phi_cpu_quantized_matmul_avx2(
                        operand.words.assumingMemoryBound(to: UInt32.self), operand.scales, operand.biases,
                        Int32(operand.wordsPerRow), Int32(operand.groupsPerRow), Int32(operand.groupSize),
                        Int32(matrix.bits), input.permuted, input.groupSums, Int32(tokens), Int32(matrix.columns),
                        Int32(rows.lowerBound), Int32(rows.upperBound), out, Int32(outStride))
                    return
                }
                #endif
                if matrix.bits == 4 {
                    operand.rows(rows, bits: 4, input: input, out: out, outStride: outStride)
                } else {
                    operand.rows(rows, bits: 8, input: input, out: out, outStride: outStride)
                }
            }
        }
    }

    #if canImport(CPhiCPU)
    /// The CPhiCPU int16 kernel for `implementation` and `matrix`, nil where it cannot take the
    /// shape (rows not whole blocks, groups straddling blocks): the float kernel runs instead.
    /// VNNI's 16-word blocks fall back to the AVX2 int16 kernel's 8-word ones.
    static func int16Kernel(_ implementation: Implementation, matrix: QuantizedMatrix) -> Int32? {
        var candidates: [Int32] = []
        if implementation == .int16VNNI { candidates.append(Int32(PHI_CPU_INT16_VNNI)) }
        if implementation == .int16VNNI || implementation == .int16AVX2 { candidates.append(Int32(PHI_CPU_INT16_AVX2)) }
        return candidates.first { kernel in
            let blockWords = Int(phi_cpu_int16_block_words(kernel))
            let blockElements = blockWords * 32 / matrix.bits
            return matrix.wordsPerRow % blockWords == 0 && matrix.columns % matrix.groupSize == 0
                && (blockElements % matrix.groupSize == 0 || matrix.groupSize % blockElements == 0)
        }
    }

    /// Quantizes x once (`Int16Input`), then runs the int16 kernel over row ranges on all cores.
    static func int16Matmul(_ matrix: QuantizedMatrix, kernel: Int32, x: UnsafePointer<Float>, xStride: Int,
                            tokens: Int, out: UnsafeMutablePointer<Float>, outStride: Int, pool: WorkerPool) {
        let input = Int16Input(matrix: matrix, blockWords: Int(phi_cpu_int16_block_words(kernel)), x: x,
                               xStride: xStride, tokens: tokens, pool: pool)
        let operand = Operand(matrix)
        withExtendedLifetime(matrix) {
            pool.parallelRanges(matrix.rows, minimumPerTask: 8, granularity: rowGranularity) { rows in
                phi_cpu_quantized_matmul_int16(
                    kernel, operand.words.assumingMemoryBound(to: UInt32.self), operand.scales, operand.biases,
                    Int32(operand.wordsPerRow), Int32(operand.groupsPerRow), Int32(operand.groupSize),
                    Int32(matrix.bits), input.quantized, input.scales, input.groupSums, Int32(tokens),
                    Int32(matrix.columns), Int32(rows.lowerBound), Int32(rows.upperBound), out, Int32(outStride))
            }
        }
    }
    #endif

    /// Dequantizes each row, then dots it with every token: for shapes the SIMD path does not take.
    static func plainMatmul(_ matrix: QuantizedMatrix, x: UnsafePointer<Float>, xStride: Int, tokens: Int,
                            out: UnsafeMutablePointer<Float>, outStride: Int, pool: WorkerPool) {
        pool.parallelRanges(matrix.rows, minimumPerTask: 8, granularity: rowGranularity) { rows in
            let row = UnsafeMutableBufferPointer<Float>.allocate(capacity: matrix.columns)  // (columns)
            defer { row.deallocate() }
            for r in rows {
                matrix.dequantizeRow(r, into: row)
                for t in 0..<tokens {
                    out[t * outStride + r] = VectorMath.dot(UnsafePointer(row.baseAddress!), x + t * xStride,
                                                            count: matrix.columns)
                }
            }
        }
    }
}

/// `x` rearranged for one matrix's blocks, and its per-group sums. Freed on deinit.
final class PermutedInput: @unchecked Sendable {
    let tokens: Int
    let columns: Int
    let groupsPerRow: Int
    /// (tokens, columns) Float32: within each block, element k × perWord + j moved to j × 8 + k.
    let permuted: UnsafeMutablePointer<Float>
    /// (tokens, groupsPerRow) Float32: Σ x over each group.
    let groupSums: UnsafeMutablePointer<Float>

    init(matrix: QuantizedMatrix, x: UnsafePointer<Float>, xStride: Int, tokens: Int) {
        let columns = matrix.columns
        let perWord = 32 / matrix.bits
        let blockElements = 8 * perWord
        self.tokens = tokens
        self.columns = columns
        self.groupsPerRow = matrix.groupsPerRow
        permuted = .allocate(capacity: tokens * columns)
        groupSums = .allocate(capacity: tokens * matrix.groupsPerRow)
        for t in 0..<tokens {
            let source = x + t * xStride
            let target = permuted + t * columns
            for blockStart in stride(from: 0, to: columns, by: blockElements) {
                for k in 0..<8 {
                    for j in 0..<perWord { target[blockStart + j * 8 + k] = source[blockStart + k * perWord + j] }
                }
            }
            for g in 0..<matrix.groupsPerRow {
                var sum: Float = 0
                for c in (g * matrix.groupSize)..<((g + 1) * matrix.groupSize) { sum += source[c] }
                groupSums[t * matrix.groupsPerRow + g] = sum
            }
        }
    }

    deinit {
        permuted.deallocate()
        groupSums.deallocate()
    }
}

#if canImport(CPhiCPU)
/// `x` quantized to int16 for one matrix's int16 kernel (`phi_cpu_quantize_int16`). Freed on deinit.
final class Int16Input: @unchecked Sendable {
    /// (tokens, 2 × columns) Int16: per block of `blockWords` words, the hi parts round(x / s), then the
    /// lo parts round((x / s − hi) × 32768), each permuted to the kernel’s lanes.
    let quantized: UnsafeMutablePointer<Int16>
    /// (tokens, groupsPerRow) Float32: s for each group, max |x| / 32767.
    let scales: UnsafeMutablePointer<Float>
    /// (tokens, groupsPerRow) Float32: Σ x over each group (exact, for the bias term).
    let groupSums: UnsafeMutablePointer<Float>

    /// One token's x is quantized on all of `pool`'s threads (a serial pass over 8192 columns takes
    /// ~25 µs, several % of a decode step on 16 cores), in slices of whole blocks and groups.
    init(matrix: QuantizedMatrix, blockWords: Int, x: UnsafePointer<Float>, xStride: Int, tokens: Int,
         pool: WorkerPool) {
        quantized = .allocate(capacity: 2 * tokens * matrix.columns)
        scales = .allocate(capacity: tokens * matrix.groupsPerRow)
        groupSums = .allocate(capacity: tokens * matrix.groupsPerRow)
        let (groupSize, bits) = (matrix.groupSize, matrix.bits)
        let blockElements = blockWords * 32 / bits
        // The kernel's shapes: whole blocks a row, and blocks and groups nest (one divides the other).
        let slice = max(blockElements, groupSize)
        guard tokens == 1, matrix.columns % slice == 0 else {
            phi_cpu_quantize_int16(x, Int32(xStride), Int32(tokens), Int32(matrix.columns), Int32(groupSize),
                                   Int32(bits), Int32(blockWords), quantized, scales, groupSums)
            return
        }
        let (quantized, scales, groupSums) = (quantized, scales, groupSums)
        pool.parallelRanges(matrix.columns / slice, minimumPerTask: max(1, 512 / slice), splitsPerThread: 1) { slices in
            let (first, count) = (slices.lowerBound * slice, slices.count * slice)
            phi_cpu_quantize_int16(x + first, Int32(xStride), 1, Int32(count), Int32(groupSize), Int32(bits),
                                   Int32(blockWords), quantized + 2 * first, scales + first / groupSize,
                                   groupSums + first / groupSize)
        }
    }

    deinit {
        quantized.deallocate()
        scales.deallocate()
        groupSums.deallocate()
    }
}
#endif

/// Raw pointers into one quantized matrix, valid while the matrix's storage lives.
struct Operand: @unchecked Sendable {
    let words: UnsafeRawPointer      // (rows, wordsPerRow) UInt32
    let scales: UnsafePointer<UInt16>  // (rows, groupsPerRow) Float16 bits
    let biases: UnsafePointer<UInt16>  // (rows, groupsPerRow) Float16 bits
    let wordsPerRow: Int
    let groupsPerRow: Int
    let groupSize: Int

    init(_ matrix: QuantizedMatrix) {
        words = matrix.packed.bytes.baseAddress!
        scales = matrix.scales.bytes.baseAddress!.assumingMemoryBound(to: UInt16.self)
        biases = matrix.biases.bytes.baseAddress!.assumingMemoryBound(to: UInt16.self)
        wordsPerRow = matrix.wordsPerRow
        groupsPerRow = matrix.groupsPerRow
        groupSize = matrix.groupSize
    }

    /// Products of `rows` with every token of `input`, 4 tokens at a time (one unpack, four uses).
    @inline(__always)
    func rows(_ rows: Range<Int>, bits: Int, input: PermutedInput, out: UnsafeMutablePointer<Float>, outStride: Int) {
        let tokens = input.tokens
        for r in rows {
            if tokens == 1 {
                out[r] = dot1(row: r, bits: bits, input: input)
                continue
            }
            var t = 0
            while t < tokens {
                let sums = dot4(row: r, bits: bits, input: input, first: t)
                for i in 0..<min(4, tokens - t) { out[(t + i) * outStride + r] = sums[i] }
                t += 4
            }
        }
    }

    /// Scales of the 8 lanes of block `block` of a row (lanes of one word share a group).
    @inline(__always)
    func laneScales(_ rowScales: UnsafePointer<UInt16>, block: Int, bits: Int) -> SIMD8<Float> {
        let perWord = 32 / bits
        let blockElements = 8 * perWord
        if groupSize >= blockElements {
            return SIMD8(repeating: Half.float(rowScales[block * blockElements / groupSize]))
        }
        var lanes = SIMD8<UInt16>()
        for k in 0..<8 { lanes[k] = rowScales[(block * blockElements + k * perWord) / groupSize] }
        return Half.floats(lanes)
    }

    /// Σ_g bias[r, g] · groupSum[t, g].
    @inline(__always)
    func biasTerm(row: Int, groupSums: UnsafePointer<Float>) -> Float {
        let rowBiases = biases + row * groupsPerRow
        var total: Float = 0
        for g in 0..<groupsPerRow { total += Half.float(rowBiases[g]) * groupSums[g] }
        return total
    }

    @inline(__always)
    func dot1(row: Int, bits: Int, input: PermutedInput) -> Float {
        let perWord = 32 / bits
        let blockElements = 8 * perWord
        let mask = SIMD8<Int32>(repeating: Int32((1 << bits) - 1))
        let rowWords = words + row * wordsPerRow * 4
        let rowScales = scales + row * groupsPerRow
        let x = UnsafeRawPointer(input.permuted)
        var accumulator = SIMD8<Float>()
        for block in 0..<(wordsPerRow / 8) {
            let packed = SIMD8<Int32>(truncatingIfNeeded: rowWords.loadUnaligned(fromByteOffset: block * 32,
                                                                                 as: SIMD8<UInt32>.self))
            let xBlock = x + block * blockElements * 4
            var blockSum = SIMD8<Float>()
            for j in 0..<perWord {
                let q = SIMD8<Float>((packed &>> Int32(j * bits)) & mask)
                blockSum += q * xBlock.loadUnaligned(fromByteOffset: j * 32, as: SIMD8<Float>.self)
            }
            accumulator += blockSum * laneScales(rowScales, block: block, bits: bits)
        }
        return accumulator.sum() + biasTerm(row: row, groupSums: input.groupSums)
    }

    /// Four tokens from `first` (tokens past the end reuse the last one; their sums are dropped).
    @inline(__always)
    func dot4(row: Int, bits: Int, input: PermutedInput, first: Int) -> SIMD4<Float> {
        let perWord = 32 / bits
        let blockElements = 8 * perWord
        let mask = SIMD8<Int32>(repeating: Int32((1 << bits) - 1))
        let rowWords = words + row * wordsPerRow * 4
        let rowScales = scales + row * groupsPerRow
        let last = input.tokens - 1
        let stride = input.columns * 4
        let x0 = UnsafeRawPointer(input.permuted) + min(first, last) * stride
        let x1 = UnsafeRawPointer(input.permuted) + min(first + 1, last) * stride
        let x2 = UnsafeRawPointer(input.permuted) + min(first + 2, last) * stride
        let x3 = UnsafeRawPointer(input.permuted) + min(first + 3, last) * stride
        var a0 = SIMD8<Float>(), a1 = SIMD8<Float>(), a2 = SIMD8<Float>(), a3 = SIMD8<Float>()
        for block in 0..<(wordsPerRow / 8) {
            let packed = SIMD8<Int32>(truncatingIfNeeded: rowWords.loadUnaligned(fromByteOffset: block * 32,
                                                                                 as: SIMD8<UInt32>.self))
            let scale = laneScales(rowScales, block: block, bits: bits)
            let offset = block * blockElements * 4
            for j in 0..<perWord {
                let q = SIMD8<Float>((packed &>> Int32(j * bits)) & mask) * scale
                let o = offset + j * 32
                a0 += q * x0.loadUnaligned(fromByteOffset: o, as: SIMD8<Float>.self)
                a1 += q * x1.loadUnaligned(fromByteOffset: o, as: SIMD8<Float>.self)
                a2 += q * x2.loadUnaligned(fromByteOffset: o, as: SIMD8<Float>.self)
                a3 += q * x3.loadUnaligned(fromByteOffset: o, as: SIMD8<Float>.self)
            }
        }
        let sums = input.groupSums
        let g = input.groupsPerRow
        return SIMD4(a0.sum() + biasTerm(row: row, groupSums: sums + min(first, last) * g),
                     a1.sum() + biasTerm(row: row, groupSums: sums + min(first + 1, last) * g),
                     a2.sum() + biasTerm(row: row, groupSums: sums + min(first + 2, last) * g),
                     a3.sum() + biasTerm(row: row, groupSums: sums + min(first + 3, last) * g))
    }
}

/// Float16 to Float32 from raw bits without F16C instructions: exact for all finite values.
enum Half {
    @inline(__always)
    static func float(_ bits: UInt16) -> Float {
        let magnitude = Float(bitPattern: UInt32(bits & 0x7FFF) << 13) * 0x1p112
        return bits & 0x8000 == 0 ? magnitude : -magnitude
    }

    @inline(__always)
    static func floats(_ bits: SIMD8<UInt16>) -> SIMD8<Float> {
        let wide = SIMD8<UInt32>(truncatingIfNeeded: bits)
        let magnitude = unsafeBitCast((wide & 0x7FFF) &<< 13, to: SIMD8<Float>.self) * 0x1p112
        let sign = (wide & 0x8000) &<< 16
        return unsafeBitCast(unsafeBitCast(magnitude, to: SIMD8<UInt32>.self) | sign, to: SIMD8<Float>.self)
    }
}
