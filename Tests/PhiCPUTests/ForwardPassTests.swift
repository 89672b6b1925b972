import PhiModel
import TestSupport
import XCTest
@testable import PhiCPU

/// The one forward pass on the CPU backend: prefill equals token-by-token decode, limits hold.
final class ForwardPassTests: XCTestCase {
    private let prompt: [Int32] = [1, 17, 42, 5, 63, 8, 29, 77, 3, 50, 11]

    /// Logits of the last prompt token from one prefill (in chunks of 4) and from one token at a time.
    private func checkPrefillMatchesDecode(_ config: ModelConfig, contextLength: Int, file: StaticString = #filePath,
                                           line: UInt = #line) throws {
        let weights = RandomWeights.make(config: config, seed: 21)
        let batched = try ForwardPass(weights: weights, backend: CPUBackend(threads: 2),
                                      contextLength: contextLength, maxBatch: 4)
        let prefill = try batched.forward(tokens: prompt, logits: .all)
        XCTAssertEqual(prefill.count, prompt.count * config.vocabularySize, file: file, line: line)

        let single = try ForwardPass(weights: weights, backend: CPUBackend(threads: 1),
                                     contextLength: contextLength, maxBatch: 1)
        var decoded: [Float] = []
        for token in prompt { decoded += try single.forward(tokens: [token], logits: .last) }
        XCTAssertEqual(single.position, prompt.count, file: file, line: line)
        XCTAssertLessThan(maxAbsoluteDifference(prefill, decoded), 1e-4, file: file, line: line)
        XCTAssertGreaterThan(decoded.map(abs).max() ?? 0, 0.01, "logits are not all ~0", file: file, line: line)

        batched.reset()
        let last = try batched.forward(tokens: prompt, logits: .last)
        XCTAssertLessThan(maxAbsoluteDifference(last, Array(prefill.suffix(config.vocabularySize))), 1e-5,
                          file: file, line: line)
    }

    func testPhi3PrefillMatchesDecodeWithShortFactors() throws {
        try checkPrefillMatchesDecode(TinyModels.phi3, contextLength: 64)
    }

    func testPhi3PrefillMatchesDecodeWithLongFactors() throws {
        try checkPrefillMatchesDecode(TinyModels.phi3, contextLength: 300)
    }

    func testLlamaPrefillMatchesDecode() throws {
        try checkPrefillMatchesDecode(TinyModels.llama, contextLength: 32)
    }

    func testContextLimitAndBadTokensAreClearErrors() throws {
        let weights = RandomWeights.make(config: TinyModels.llama, seed: 2)
        let pass = try ForwardPass(weights: weights, backend: CPUBackend(), contextLength: 4)
        _ = try pass.forward(tokens: [1, 2, 3], logits: .last)
        XCTAssertThrowsError(try pass.forward(tokens: [4, 5], logits: .last)) { error in
            XCTAssertTrue("\(error)".contains("exceeds the limit of 4"), "\(error)")
        }
        pass.reset()
        XCTAssertThrowsError(try pass.forward(tokens: [80], logits: .last)) { error in
            XCTAssertTrue("\(error)".contains("token id 80"), "\(error)")
        }
    }

    func testLongRoPEChoosesFactorsByContextAndScales() {
        let config = TinyModels.phi3
        let short = RotaryEmbedding(config: config, contextLength: 256)
        let long = RotaryEmbedding(config: config, contextLength: 257)
        let scaling = Float((1 + log(8192.0 / 256.0) / log(256.0)).squareRoot())
        XCTAssertEqual(short.attentionScaling, scaling, accuracy: 1e-6)
        XCTAssertEqual(long.attentionScaling, scaling, accuracy: 1e-6)
        XCTAssertEqual(short.inverseFrequencies[1], 1 / (1.1 * pow(10000, 2.0 / 12)), accuracy: 1e-6)
        XCTAssertEqual(long.inverseFrequencies[1], 1 / (4 * pow(10000, 2.0 / 12)), accuracy: 1e-6)
        let plain = RotaryEmbedding(config: TinyModels.llama, contextLength: 2048)
        XCTAssertEqual(plain.attentionScaling, 1)
        XCTAssertEqual(plain.inverseFrequencies.count, 8)
        XCTAssertEqual(plain.inverseFrequencies[7], 1 / pow(100000, 14.0 / 16), accuracy: 1e-9)
    }
}
