import PhiModel
import TestSupport
import XCTest
@testable import PhiCPU

/// Sampling rules and the generation loop over a random tiny model.
final class SamplerTests: XCTestCase {
    private let logits: [Float] = [0.5, 2.0, -1.0, 1.9, 0.0, 1.0]

    func testGreedyAndTopKOnePickTheLargest() {
        var greedy = Sampler(options: .greedy)
        XCTAssertEqual(greedy.sample(logits: logits, history: []), 1)
        var topOne = Sampler(options: SamplingOptions(temperature: 1, topK: 1, seed: 9))
        for _ in 0..<20 { XCTAssertEqual(topOne.sample(logits: logits, history: []), 1) }
    }

    func testSameSeedSameTokensOtherSeedOtherTokens() {
        func draw(_ seed: UInt64) -> [Int32] {
            var sampler = Sampler(options: SamplingOptions(temperature: 1.5, seed: seed))
            return (0..<400).map { _ in sampler.sample(logits: logits, history: []) }
        }
        XCTAssertEqual(draw(42), draw(42))
        XCTAssertNotEqual(draw(42), draw(43))
        XCTAssertEqual(Set(draw(42)).count, 6, "a hot temperature reaches every token")
    }

    func testTopPAndMinPRestrictTheCandidates() {
        // Softmax at temperature 1: ids 1 and 3 hold about 0.59 of the mass together.
        var topP = Sampler(options: SamplingOptions(temperature: 1, topP: 0.55, seed: 1))
        XCTAssertEqual(Set((0..<200).map { _ in topP.sample(logits: logits, history: []) }), [1, 3])
        // min-p 0.5: only tokens with p ≥ 0.5 p(1), i.e. logit ≥ 2 - ln 2: ids 1, 3.
        var minP = Sampler(options: SamplingOptions(temperature: 1, minP: 0.5, seed: 2))
        XCTAssertEqual(Set((0..<200).map { _ in minP.sample(logits: logits, history: []) }), [1, 3])
    }

    func testRepetitionPenaltyOnlyOverTheWindow() {
        var sampler = Sampler(options: SamplingOptions(temperature: 0, repetitionPenalty: 2, repetitionWindow: 2))
        XCTAssertEqual(sampler.sample(logits: logits, history: [1]), 3, "2.0 / 2 < 1.9")
        XCTAssertEqual(sampler.sample(logits: logits, history: [1, 4, 4]), 1, "1 is outside the window")
    }

    func testGenerationStopsAndStreams() throws {
        let weights = RandomWeights.make(config: TinyModels.llama, seed: 4)
        let pass = try ForwardPass(weights: weights, backend: CPUBackend(), contextLength: 24, maxBatch: 8)
        let prompt: [Int32] = [1, 2, 3, 4]
        var streamed: [Int32] = []
        let free = try Generator.generate(pass: pass, prompt: prompt, options: GenerationOptions(
            maxTokens: 6, sampling: .greedy)) { streamed.append($0); return true }
        XCTAssertEqual(free.tokens, streamed)
        XCTAssertEqual(free.tokens.count, 6)
        XCTAssertEqual(free.stopReason, .maxTokens)
        // Greedy is deterministic, and stopping on the third token keeps the first two.
        let stop = free.tokens[2]
        let stopped = try Generator.generate(pass: pass, prompt: prompt, options: GenerationOptions(
            maxTokens: 6, sampling: .greedy, stopTokens: [stop]))
        XCTAssertEqual(stopped.stopReason, .stopToken(stop))
        XCTAssertEqual(stopped.tokens, Array(free.tokens.prefix(while: { $0 != stop })))
        // The context of 24 ends a long generation; a prompt that fills it is refused.
        let full = try Generator.generate(pass: pass, prompt: prompt, options: GenerationOptions(
            maxTokens: 100, sampling: .greedy))
        XCTAssertEqual(full.stopReason, .contextFull)
        XCTAssertEqual(full.tokens.count, 24 - prompt.count + 1)
        XCTAssertThrowsError(try Generator.generate(pass: pass, prompt: [Int32](repeating: 1, count: 24),
                                                    options: GenerationOptions())) { error in
            XCTAssertTrue("\(error)".contains("24 tokens but the context window holds 24"), "\(error)")
        }
    }
}
