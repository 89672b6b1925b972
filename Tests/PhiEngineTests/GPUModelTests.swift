import Foundation
import PhiCPU
import PhiEngine
import PhiGPU
import PhiModel
import TestSupport
import XCTest

/// The whole model on the GPU (llvmpipe in CI) against the CPU backend: logits of the tiny
/// Phi-shaped fixtures in both RoPE regimes, and greedy SmolLM2 tokens.
final class GPUModelTests: XCTestCase {
    func gpuBackend() throws -> GPUBackend {
        do {
            return try GPUBackend(context: try GPUContext(allowCPUDevices: true))
        } catch let error as GPUUnavailable where !TestPaths.isCI {
            throw XCTSkip("\(error)")
        }
    }

    /// Tolerance 2e-2 absolute on logits (the bound for GPU against CPU).
    func testTinyFixtureLogitsMatchTheCPUInBothRopeRegimes() throws {
        let ids: [Int32] = [1, 450, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203, 29889, 32010, 13, 3492]
        for fixture in ["tiny-phi3.5-4bit", "tiny-phi4-mini-4bit"] {
            let url = try TestPaths.require(TestPaths.fixtures.appendingPathComponent(fixture),
                                            hint: "the fixture is committed; run Scripts/fixtures/make_tiny_models.py")
            let weights = try CheckpointLoader.load(from: url).weights
            for contextLength in [4096, 8192] {  // short factors, then long factors (original context 4096)
                let cpu = try ForwardPass(weights: weights, backend: CPUBackend(), contextLength: contextLength, maxBatch: 8)
                let gpu = try ForwardPass(weights: weights, backend: try gpuBackend(), contextLength: contextLength, maxBatch: 8)
                let expected = try cpu.forward(tokens: ids, logits: .all)
                let got = try gpu.forward(tokens: ids, logits: .all)
                XCTAssertEqual(got.count, expected.count)
                XCTAssertFalse(got.contains { !$0.isFinite }, "\(fixture) ctx \(contextLength): non-finite GPU logits")
                XCTAssertLessThanOrEqual(maxAbsoluteDifference(got, expected), 2e-2, "\(fixture) ctx \(contextLength)")
                // Then decode steps.
                for token: Int32 in [13, 29871, 3492] {
                    let d = maxAbsoluteDifference(try gpu.forward(tokens: [token], logits: .last), try cpu.forward(tokens: [token], logits: .last))
                    XCTAssertLessThanOrEqual(d, 2e-2, "\(fixture) ctx \(contextLength) decode")
                }
            }
        }
    }

    /// Greedy, chat template, "What is the capital of France?": the same 32 tokens on both backends.
    func testSmolLM2GreedyTokensEqualTheCPU() throws {
        let model = try TestPaths.require(TestPaths.smolLM2, hint: "run bash Scripts/fetch-smollm2.sh")
        let options = GenerationOptions(maxTokens: 32, sampling: .greedy, stopTokens: [])
        var answers: [[Int32]] = []
        for backend in [Engine.BackendChoice.cpu(), .custom(try gpuBackend())] {
            let engine = try Engine(model: model, contextLength: 256, backend: backend)
            let prompt = try engine.promptIds(prompt: "What is the capital of France?")
            let result = try Generator.generate(pass: engine.forwardPass, prompt: prompt, options: options) { _ in true }
            XCTAssertEqual(result.tokens.count, 32, engine.backendName)
            answers.append(result.tokens)
            if answers.count == 1 {
                let text = engine.tokenizer.decode(result.tokens.map(Int.init), skipSpecialTokens: true)
                XCTAssertTrue(text.hasPrefix("The capital of France is Paris."), text)
            }
        }
        XCTAssertEqual(answers[1], answers[0], "GPU tokens differ from the CPU's")
    }
}
