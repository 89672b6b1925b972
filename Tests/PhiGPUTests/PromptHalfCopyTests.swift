import Foundation
import PhiCPU
@testable import PhiGPU
import PhiModel
import TestSupport
import XCTest

/// A prompt's RMSNorm and SiLU gate also write their output as Float16 pairs for the cooperative
/// product that reads it next (rms_norm.comp and elementwise.comp with HALF_COPY). Run here with the
/// copies forced on, since llvmpipe's products read Float32: the outputs still match the CPU
/// (1e-5 relative), the copy is their Float16 rounding (to 1 ulp of Float16), and the conversion
/// that follows is queued only when the copy does not cover what the product reads.
final class PromptHalfCopyTests: XCTestCase {
    let seed = UInt64(Date().timeIntervalSince1970 * 1000)
    lazy var random = SeededRandom(seed: seed)

    /// The first `count` values of `halves` (`halfInputs`, whose shape is that of its largest use
    /// so far), low half of each pair first.
    func unpacked(_ backend: GPUBackend, _ halves: GPUTensor, count: Int) throws -> [Float] {
        let rows = (count / 2 + halves.columns - 1) / halves.columns
        return try backend.read(halves, rows: 0..<rows).prefix(count / 2).map(\.bitPattern).flatMap {
            [Float(Float16(bitPattern: UInt16($0 & 0xFFFF))), Float(Float16(bitPattern: UInt16($0 >> 16)))]
        }
    }

    /// Whether each copied value is its output rounded to Float16 (within one Float16 ulp).
    func assertCopy(_ copy: [Float], of values: [Float], _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(copy.count, values.count, what, file: file, line: line)
        let worst = zip(copy, values).map { abs($0 - $1) / max(abs($1), 1e-3) }.max() ?? .infinity
        XCTAssertLessThanOrEqual(worst, 1.0 / 1024, "\(what): Float16 copy, random seed \(seed)", file: file, line: line)
    }

    /// A backend for random weights of `config` with the copies forced on, and `tokens` rows of
    /// random x (in -4...4) uploaded to a tensor beside an empty one of the same shape.
    func backendWithInput(_ config: ModelConfig, tokens: Int) throws
        -> (backend: GPUBackend, weights: ModelWeights, x: [Float], input: GPUTensor, output: GPUTensor) {
        let weights = RandomWeights.make(config: config, seed: random.next(), bits: 4, groupSize: 16)
        let backend = try GPUBackend(context: try TestGPU.context())
        try backend.prepare(weights: weights, contextLength: 64, rotary: RotaryEmbedding(config: config, contextLength: 64))
        backend.writesHalfCopies = true
        let x = random.floats(tokens * config.hiddenSize, in: -4...4)
        let input = try XCTUnwrap(try backend.makeTensor(rows: tokens, columns: config.hiddenSize) as? GPUTensor)
        try input.buffer.upload(x)
        let output = try XCTUnwrap(try backend.makeTensor(rows: tokens, columns: config.hiddenSize) as? GPUTensor)
        return (backend, weights, x, input, output)
    }

    func testPromptNormAndSiluWriteTheFloat16CopyTheProductReads() throws {
        let config = GPUBackendTests.smallConfig
        let tokens = 12
        let (backend, weights, x, input, normed) = try backendWithInput(config, tokens: tokens)
        try backend.rmsNorm(input, weight: .attentionNorm(layer: 0), count: tokens, into: normed)
        let queued = backend.stream.queued.count
        let halves = try backend.queueHalfConversion(normed, rows: 0..<tokens)
        XCTAssertEqual(backend.stream.queued.count, queued, "the norm's copy is taken: no conversion queued")
        let normWeight = weights.layers[0].attentionNorm.withFloats { Array($0.prefix(config.hiddenSize)) }
        let expected = CPUReference.rmsNorm(x, weight: normWeight, epsilon: config.rmsNormEpsilon)
        let got = try backend.read(normed, rows: 0..<tokens)
        TestSupport.assertClose(got, expected, relative: 1e-5, "rmsNorm with its copy", note: "random seed \(seed)")
        assertCopy(try unpacked(backend, halves, count: got.count), of: got, "rmsNorm")

        let gateUpValues = random.floats(tokens * 2 * config.intermediateSize, in: -6...6)
        let gateUp = try XCTUnwrap(try backend.makeTensor(rows: tokens, columns: 2 * config.intermediateSize) as? GPUTensor)
        try gateUp.buffer.upload(gateUpValues)
        let gated = try XCTUnwrap(try backend.makeTensor(rows: tokens, columns: config.intermediateSize) as? GPUTensor)
        try backend.siluGate(gateUp, count: tokens, into: gated)
        let afterSilu = backend.stream.queued.count
        let gatedHalves = try backend.queueHalfConversion(gated, rows: 0..<tokens)
        XCTAssertEqual(backend.stream.queued.count, afterSilu, "the SiLU gate's copy is taken")
        let gatedValues = try backend.read(gated, rows: 0..<tokens)
        TestSupport.assertClose(gatedValues, CPUReference.siluGate(gateUpValues, intermediate: config.intermediateSize),
                                relative: 1e-5, "siluGate with its copy", note: "random seed \(seed)")
        assertCopy(try unpacked(backend, gatedHalves, count: gatedValues.count), of: gatedValues, "siluGate")

        // Other rows than the copy's, or a command queued in between: converted as before.
        try backend.rmsNorm(input, weight: .attentionNorm(layer: 0), count: tokens, into: normed)
        let beforeOtherRows = backend.stream.queued.count
        let shifted = try backend.queueHalfConversion(normed, rows: 2..<tokens)
        XCTAssertEqual(backend.stream.queued.count, beforeOtherRows + 1, "rows 2..<12 are not the copy's rows")
        assertCopy(try unpacked(backend, shifted, count: (tokens - 2) * config.hiddenSize), of: Array(got[(2 * config.hiddenSize)...]), "rows 2..<12")
        try backend.rmsNorm(input, weight: .attentionNorm(layer: 0), count: tokens, into: normed)
        try backend.siluGate(gateUp, count: tokens, into: gated)
        let beforeStale = backend.stream.queued.count
        _ = try backend.queueHalfConversion(normed, rows: 0..<tokens)
        XCTAssertEqual(backend.stream.queued.count, beforeStale + 1, "the norm's copy was overwritten by the SiLU gate's")
        XCTAssertEqual(try backend.read(normed, rows: 0..<tokens), got, "the same norm again")

        // Fewer tokens than a prefill product takes: no copy.
        let short = try XCTUnwrap(try backend.makeTensor(rows: 4, columns: config.hiddenSize) as? GPUTensor)
        try backend.rmsNorm(input, weight: .attentionNorm(layer: 0), count: 4, into: short)
        let beforeShort = backend.stream.queued.count
        _ = try backend.queueHalfConversion(short, rows: 0..<4)
        XCTAssertEqual(backend.stream.queued.count, beforeShort + 1)
        try TestGPU.assertNoValidationErrors()
    }

    /// Rows wider than the norm keeps in registers (4 vec4s an invocation, 4,096 values at 256
    /// invocations): the rest is read again in the second pass.
    func testPromptNormOfRowsWiderThanItsRegisters() throws {
        var config = GPUBackendTests.smallConfig
        config.hiddenSize = 4 * 4 * 256 + 32
        let tokens = 9
        let (backend, weights, x, input, normed) = try backendWithInput(config, tokens: tokens)
        try backend.rmsNorm(input, weight: .mlpNorm(layer: 0), count: tokens, into: normed)
        let halves = try backend.queueHalfConversion(normed, rows: 0..<tokens)
        let normWeight = weights.layers[0].mlpNorm.withFloats { Array($0.prefix(config.hiddenSize)) }
        let got = try backend.read(normed, rows: 0..<tokens)
        TestSupport.assertClose(got, CPUReference.rmsNorm(x, weight: normWeight, epsilon: config.rmsNormEpsilon), relative: 1e-5,
                                "rmsNorm of \(config.hiddenSize) columns", note: "random seed \(seed)")
        assertCopy(try unpacked(backend, halves, count: got.count), of: got, "rmsNorm of \(config.hiddenSize) columns")
        try TestGPU.assertNoValidationErrors()
    }
}
