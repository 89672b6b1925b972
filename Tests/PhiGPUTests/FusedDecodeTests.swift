import Foundation
import PhiCPU
import PhiFormats
import PhiGPU
import PhiModel
import TestSupport
import VulkanKit
import XCTest

/// The decode product with the operations fused into it (the RMSNorm or SiLU gate that produced its
/// input, the residual add after it) against the CPU reference, at several rows-per-subgroup and
/// loads-in-flight settings, on fresh random inputs. The profile shows that the fusion happened:
/// the separate norm, SiLU and add dispatches are gone. Products run both ways: with integer dot
/// products (where the device has them; x in two signed bytes per value) and in floating point.
/// Tolerance relative to the largest output: 1e-4 with integer dot products, else
/// `decodeProductTolerance` (1e-3 for 4-bit weights in Float16, 2e-4 for 8-bit); the fused
/// operations' own outputs 1e-5.
final class FusedDecodeTests: XCTestCase {
    let seed = UInt64(Date().timeIntervalSince1970 * 1000)
    lazy var random = SeededRandom(seed: seed)

    /// Widths the staged kernel takes with fusion: groups of 64, an intermediate size of two chunks.
    static let config = ModelConfig(
        architecture: .llama, hiddenSize: 128, intermediateSize: 4160, layerCount: 1, headCount: 4, kvHeadCount: 2,
        headDimension: 32, vocabularySize: 200, rmsNormEpsilon: 1e-5, ropeTheta: 10000, rotaryDimensions: 32,
        maxContext: 256, longRoPE: nil, tiedEmbeddings: false)

    func tensor(_ backend: GPUBackend, _ values: [Float], columns: Int) throws -> GPUTensor {
        let made = try XCTUnwrap(try backend.makeTensor(rows: 1, columns: columns) as? GPUTensor)
        try made.buffer.upload(values)
        return made
    }

    func assertClose(_ got: [Float], _ expected: [Float], relative: Float, _ what: String,
                     file: StaticString = #filePath, line: UInt = #line) {
        TestSupport.assertClose(got, expected, relative: relative, what, note: "seed \(seed)", file: file, line: line)
    }

    func testNormAndSiluFusedIntoDecodeProductsMatchTheCPU() throws {
        let config = Self.config
        for (bits, integerDot) in [(4, true), (4, false), (8, true), (8, false)] {
            let weights = RandomWeights.make(config: config, seed: random.next(), bits: bits, groupSize: 64)
            let backend = try GPUBackend(context: try TestGPU.context())
            backend.decodeProducts.integerDot = integerDot
            let usesIntegerDot = integerDot && backend.context.device.enabled.integerDotProduct
            let suffix = usesIntegerDot ? "Int" : ""
            let tolerance = usesIntegerDot ? 1e-4 : decodeProductTolerance(bits: bits)
            try backend.prepare(weights: weights, contextLength: 16, rotary: RotaryEmbedding(config: config, contextLength: 16))
            for (rows, unroll) in [(4, 2), (1, 1), (3, 4), (8, 1)] {
                backend.decodeProducts.rowsPerSubgroup = rows
                backend.decodeProducts.blocksInFlight = unroll
                let what = "\(bits)-bit\(usesIntegerDot ? " (integer dot products)" : ""), \(rows) rows × \(unroll) blocks"

                // RMSNorm then the qkv product: one dispatch, which also writes the normed x.
                let x = random.floats(config.hiddenSize, in: -3...3)
                let residual = try tensor(backend, x, columns: config.hiddenSize)
                let normed = try tensor(backend, [Float](repeating: .nan, count: config.hiddenSize), columns: config.hiddenSize)
                let qkv = try tensor(backend, [Float](repeating: .nan, count: config.qkvRows), columns: config.qkvRows)
                backend.profiling = true
                try backend.rmsNorm(residual, weight: .attentionNorm(layer: 0), count: 1, into: normed)
                try backend.matmul(normed, rows: 0..<1, weight: .qkv(layer: 0), into: qkv)
                let gotQKV = try backend.read(qkv, rows: 0..<1)
                XCTAssertEqual(backend.lastProfile.map(\.name).sorted(), ["copy", "matvecStagedNormQ\(bits)\(suffix)"], what)
                let normWeight = weights.layers[0].attentionNorm.withFloats { Array($0.prefix(config.hiddenSize)) }
                let expectedNormed = CPUReference.rmsNorm(x, weight: normWeight, epsilon: config.rmsNormEpsilon)
                assertClose(gotQKV, CPUReference.matmul(expectedNormed, weight: weights.layers[0].qkv), relative: tolerance, "qkv, \(what)")
                assertClose(try backend.read(normed, rows: 0..<1), expectedNormed, relative: 1e-5, "normed, \(what)")

                // SiLU gate, the down product (8320 columns: two chunks) and the residual add: one dispatch.
                let gateUpValues = random.floats(2 * config.intermediateSize, in: -6...6)
                let gateUp = try tensor(backend, gateUpValues, columns: 2 * config.intermediateSize)
                let gated = try tensor(backend, [Float](repeating: .nan, count: config.intermediateSize), columns: config.intermediateSize)
                let projected = try tensor(backend, [Float](repeating: .nan, count: config.hiddenSize), columns: config.hiddenSize)
                try backend.siluGate(gateUp, count: 1, into: gated)
                try backend.matmul(gated, rows: 0..<1, weight: .down(layer: 0), into: projected)
                try backend.add(projected, count: 1, into: residual)
                let gotProjected = try backend.read(projected, rows: 0..<1)
                XCTAssertEqual(backend.lastProfile.map(\.name).sorted(), ["copy", "matvecStagedSiluAddQ\(bits)\(suffix)"], what)
                backend.profiling = false
                let expectedGated = CPUReference.siluGate(gateUpValues, intermediate: config.intermediateSize)
                let expectedProjected = CPUReference.matmul(expectedGated, weight: weights.layers[0].down)
                assertClose(gotProjected, expectedProjected, relative: tolerance, "down, \(what)")
                assertClose(try backend.read(gated, rows: 0..<1), expectedGated, relative: 1e-5, "gated, \(what)")
                assertClose(try backend.read(residual, rows: 0..<1), zip(x, expectedProjected).map(+), relative: tolerance,
                            "residual, \(what)")
            }
        }
        try TestGPU.assertNoValidationErrors()
    }
}
