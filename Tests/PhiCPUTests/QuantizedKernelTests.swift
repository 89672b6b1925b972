import PhiFormats
import PhiModel
import TestSupport
import XCTest
@testable import PhiCPU

/// The SIMD quantized products against `CPUReference.matmul`, over bits, group sizes and token counts.
final class QuantizedKernelTests: XCTestCase {
    private static let pool = WorkerPool(threads: 2)

    private func check(bits: Int, groupSize: Int, rows: Int, columns: Int, tokens: Int, seed: UInt64,
                       outliers: Bool = false, file: StaticString = #filePath, line: UInt = #line) {
        var random = SeededRandom(seed: seed)
        let config = ModelConfig(
            architecture: .llama, hiddenSize: columns, intermediateSize: 8, layerCount: 0, headCount: 1,
            kvHeadCount: 1, headDimension: columns, vocabularySize: rows, rmsNormEpsilon: 1e-5, ropeTheta: 1,
            rotaryDimensions: 0, maxContext: 1, longRoPE: nil, tiedEmbeddings: true)
        let matrix = RandomWeights.make(config: config, seed: seed, bits: bits, groupSize: groupSize).embedding
        var x = random.floats(tokens * columns)  // (tokens, columns)
        if outliers {  // a few large channels, as in real activations: the int16 scales are per group
            for t in 0..<tokens { for c in stride(from: 5, to: columns, by: 97) { x[t * columns + c] *= 80 } }
        }
        let expected = CPUReference.matmul(x, weight: matrix)
        let scale = expected.map(abs).max() ?? 1
        for implementation in QuantizedKernels.available {
            var out = [Float](repeating: .nan, count: tokens * rows)  // (tokens, rows)
            x.withUnsafeBufferPointer { x in
                out.withUnsafeMutableBufferPointer { out in
                    QuantizedKernels.matmul(matrix, x: x.baseAddress!, xStride: columns, tokens: tokens,
                                            out: out.baseAddress!, outStride: rows, pool: Self.pool,
                                            implementation: implementation)
                }
            }
            XCTAssertLessThan(maxAbsoluteDifference(out, expected), 1e-5 * max(scale, 1),
                              "\(implementation): bits \(bits) group \(groupSize) tokens \(tokens)", file: file, line: line)
        }
    }

    func testFourBitMatchesReference() {
        for (groupSize, tokens) in [(64, 1), (64, 5), (32, 1), (32, 3), (128, 4), (16, 2)] {
            check(bits: 4, groupSize: groupSize, rows: 37, columns: 256, tokens: tokens, seed: UInt64(groupSize + tokens))
        }
    }

    /// Rows wide enough that one token's x is quantized in slices on several threads.
    func testWideRowsQuantizedInParallel() {
        for (bits, groupSize) in [(4, 64), (4, 32), (4, 128), (8, 64), (8, 256)] {
            check(bits: bits, groupSize: groupSize, rows: 21, columns: 3072, tokens: 1,
                  seed: UInt64(bits * 100 + groupSize), outliers: true)
        }
    }

    func testEightBitMatchesReference() {
        for (groupSize, tokens) in [(64, 1), (32, 6), (16, 1), (128, 2)] {
            check(bits: 8, groupSize: groupSize, rows: 29, columns: 128, tokens: tokens, seed: UInt64(groupSize * tokens))
        }
    }

    /// Every kernel (the int16 ones included) over token counts around its tiles, odd row counts,
    /// activations with outliers, and widths that are not whole 16-word blocks (VNNI falls back).
    func testTokenCountsGroupsAndOutliers() {
        for bits in [4, 8] {
            for groupSize in [32, 64, 128] {
                for tokens in [1, 2, 3, 4, 5, 7, 9, 64] {
                    check(bits: bits, groupSize: groupSize, rows: 13, columns: 512, tokens: tokens,
                          seed: UInt64(bits * 1000 + groupSize * 10 + tokens), outliers: tokens % 2 == 1)
                }
            }
        }
        check(bits: 4, groupSize: 64, rows: 9, columns: 192, tokens: 3, seed: 11)  // 24 words a row
        check(bits: 8, groupSize: 32, rows: 9, columns: 96, tokens: 1, seed: 12)   // 24 words a row
    }

    /// Rows wider than the AVX2 float kernel's 512-column panels (chunks after the first add to the
    /// output), with row counts that are not whole 12-row panels or 3-row tiles.
    func testPromptProductsOverSeveralColumnChunks() {
        check(bits: 4, groupSize: 64, rows: 27, columns: 1280, tokens: 9, seed: 13, outliers: true)
        check(bits: 4, groupSize: 32, rows: 16, columns: 1536, tokens: 64, seed: 14)
        check(bits: 8, groupSize: 128, rows: 14, columns: 1152, tokens: 6, seed: 15)
    }

    /// 96 columns is not a whole number of 8-word 4-bit blocks: the plain path must be taken and agree.
    func testPlainPathForOddWidths() {
        check(bits: 4, groupSize: 32, rows: 11, columns: 96, tokens: 3, seed: 7)
    }

    func testHalfConversionIsExact() {
        for value: Float16 in [0, -0, 1, -2.5, 0.000061, 6e-8, -6e-8, 65504, 0.1, -0.3333] {
            XCTAssertEqual(Half.float(value.bitPattern), Float(value))
        }
        let lanes = SIMD8<UInt16>(Float16(1).bitPattern, Float16(-3).bitPattern, Float16(0.5).bitPattern, 0,
                                  Float16(6e-8).bitPattern, Float16(-100).bitPattern, Float16(7).bitPattern,
                                  Float16(0.01).bitPattern)
        let floats = Half.floats(lanes)
        for k in 0..<8 { XCTAssertEqual(floats[k], Float(Float16(bitPattern: lanes[k]))) }
    }
}
