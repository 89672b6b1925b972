import PhiFormats
import PhiModel
import TestSupport
import XCTest
@testable import PhiCPU

/// Each CPU backend operation, called as the forward pass calls it, against `CPUReference`.
final class CPUBackendOperationTests: XCTestCase {
    private let config = TinyModels.phi3
    private var weights: ModelWeights!
    private var backend: CPUBackend!
    private var rotary: RotaryEmbedding!

    override func setUpWithError() throws {
        weights = RandomWeights.make(config: config, seed: 11)
        backend = CPUBackend(threads: 2)
        rotary = RotaryEmbedding(config: config, contextLength: 512)
        try backend.prepare(weights: weights, contextLength: 16, rotary: rotary)
    }

    private func tensor(_ values: [Float], columns: Int) throws -> BackendTensor {
        let t = try backend.makeTensor(rows: values.count / columns, columns: columns)
        (t as! CPUTensor).pointer.update(from: values, count: values.count)
        return t
    }

    func testEmbedAndRMSNorm() throws {
        let tokens: [Int32] = [3, 95, 0]
        let x = try backend.makeTensor(rows: 3, columns: config.hiddenSize)
        try backend.embed(tokens: tokens, into: x)
        let embedded = try backend.read(x, rows: 0..<3)
        XCTAssertEqual(embedded, CPUReference.embed(tokens: tokens, table: weights.embedding))

        let out = try backend.makeTensor(rows: 3, columns: config.hiddenSize)
        try backend.rmsNorm(x, weight: .mlpNorm(layer: 1), count: 3, into: out)
        let norm = weights.layers[1].mlpNorm.withFloats { Array($0) }
        let expected = CPUReference.rmsNorm(embedded, weight: norm, epsilon: config.rmsNormEpsilon)
        XCTAssertLessThan(maxAbsoluteDifference(try backend.read(out, rows: 0..<3), expected), 1e-5)
    }

    func testMatmulOfARowRange() throws {
        var random = SeededRandom(seed: 5)
        let x = random.floats(4 * config.hiddenSize)  // (4, hidden)
        let input = try tensor(x, columns: config.hiddenSize)
        let out = try backend.makeTensor(rows: 4, columns: config.qkvRows)
        try backend.matmul(input, rows: 1..<4, weight: .qkv(layer: 0), into: out)
        let expected = CPUReference.matmul(Array(x[config.hiddenSize...]), weight: weights.layers[0].qkv)
        XCTAssertLessThan(maxAbsoluteDifference(try backend.read(out, rows: 0..<3), expected), 1e-4)
    }

    /// RoPE of q and k, the cache write, then attention, for 3 tokens from position 2.
    func testRotateCacheAndAttend() throws {
        var random = SeededRandom(seed: 9)
        let qWidth = config.headCount * config.headDimension
        let kvWidth = config.kvHeadCount * config.headDimension
        let qkvRows = random.floats(5 * config.qkvRows)  // (5, qkvRows) for positions 0...4
        let qkv = try tensor(qkvRows, columns: config.qkvRows)
        let queries = try backend.makeTensor(rows: 5, columns: qWidth)
        let attended = try backend.makeTensor(rows: 5, columns: qWidth)
        try backend.rotateAndCache(qkv: qkv, layer: 1, startPosition: 0, count: 2, queries: queries)
        let later = try tensor(Array(qkvRows[(2 * config.qkvRows)...]), columns: config.qkvRows)
        try backend.rotateAndCache(qkv: later, layer: 1, startPosition: 2, count: 3, queries: queries)
        try backend.attention(queries: queries, layer: 1, startPosition: 2, count: 3, into: attended)
        let result = try backend.read(attended, rows: 0..<3)

        var keys: [Float] = [], values: [Float] = []
        for p in 0..<5 {
            let row = Array(qkvRows[(p * config.qkvRows)..<((p + 1) * config.qkvRows)])
            keys += CPUReference.rope(Array(row[qWidth..<(qWidth + kvWidth)]), heads: config.kvHeadCount,
                                      headDimension: config.headDimension, position: p, rotary: rotary)
            values += row[(qWidth + kvWidth)...]
        }
        for i in 0..<3 {
            let p = 2 + i
            let row = Array(qkvRows[(p * config.qkvRows)..<((p + 1) * config.qkvRows)])
            let q = CPUReference.rope(Array(row[0..<qWidth]), heads: config.headCount,
                                      headDimension: config.headDimension, position: p, rotary: rotary)
            XCTAssertLessThan(maxAbsoluteDifference(try backend.read(queries, rows: i..<i + 1), q), 1e-5)
            let expected = CPUReference.attention(
                query: q, keys: Array(keys[0..<((p + 1) * kvWidth)]), values: Array(values[0..<((p + 1) * kvWidth)]),
                headCount: config.headCount, kvHeadCount: config.kvHeadCount, headDimension: config.headDimension)
            XCTAssertLessThan(maxAbsoluteDifference(Array(result[(i * qWidth)..<((i + 1) * qWidth)]), expected), 1e-5)
        }
    }

    func testSiluGateAndAdd() throws {
        var random = SeededRandom(seed: 3)
        let gateUpValues = random.floats(2 * 2 * config.intermediateSize, in: -6...6)
        let gateUp = try tensor(gateUpValues, columns: 2 * config.intermediateSize)
        let gated = try backend.makeTensor(rows: 2, columns: config.intermediateSize)
        try backend.siluGate(gateUp, count: 2, into: gated)
        let expected = CPUReference.siluGate(gateUpValues, intermediate: config.intermediateSize)
        XCTAssertLessThan(maxAbsoluteDifference(try backend.read(gated, rows: 0..<2), expected), 1e-5)

        let a = random.floats(2 * 8), b = random.floats(2 * 8)
        let accumulator = try tensor(a, columns: 8)
        try backend.add(try tensor(b, columns: 8), count: 2, into: accumulator)
        XCTAssertEqual(try backend.read(accumulator, rows: 0..<2), zip(a, b).map { $0 + $1 })
    }

    func testRejectsMismatchedWeights() {
        var broken = weights!
        broken.layers[0].down = weights.layers[0].gateUp
        XCTAssertThrowsError(try CPUBackend().prepare(weights: broken, contextLength: 8, rotary: rotary)) { error in
            XCTAssertTrue("\(error)".contains("layers.0.down"), "\(error)")
        }
    }
}
