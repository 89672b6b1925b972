import Foundation
import PhiModel
import PhiTokenizer
import TestSupport
import XCTest
@testable import PhiCPU

/// Acceptance: the real SmolLM2-135M-Instruct Q4_1 GGUF, greedy, chat template applied, answers
/// "What is the capital of France?" with the ids of an independent transformers run
/// (Tests/Fixtures/reference-logits/smollm2-france.json, by Scripts/reference/make_smollm2_reference.py).
final class SmolLM2Tests: XCTestCase {
    private struct Expected: Decodable {
        var system: String
        var question: String
        var prompt_ids: [Int]
        var answer_ids: [Int]
        var answer: String
    }

    func testGreedyFranceAnswerMatchesTransformers() throws {
        let model = try TestPaths.require(TestPaths.smolLM2, hint: "run bash Scripts/fetch-smollm2.sh")
        let expected = try JSONDecoder().decode(Expected.self, from: Data(contentsOf: TestPaths.fixtures
            .appendingPathComponent("reference-logits/smollm2-france.json")))
        let checkpoint = try CheckpointLoader.load(from: model)
        guard case .gguf(let file) = checkpoint.source else { return XCTFail("a GGUF checkpoint loads as .gguf") }
        let tokenizer = try Tokenizer(gguf: file)
        let template = try ChatTemplate(tokenizer: tokenizer)
        let prompt = try template.render(messages: [ChatMessage(role: "system", content: expected.system),
                                                    ChatMessage(role: "user", content: expected.question)],
                                         addGenerationPrompt: true)
        let promptIds = tokenizer.encode(prompt, addSpecialTokens: false, parseSpecial: true)
        XCTAssertEqual(promptIds, expected.prompt_ids)

        var stops = Set(checkpoint.eosTokenIds.map(Int32.init))
        if let end = tokenizer.tokenId(for: template.endOfTurnToken) { stops.insert(Int32(end)) }
        let pass = try ForwardPass(weights: checkpoint.weights, backend: CPUBackend(), contextLength: 256)
        let result = try Generator.generate(pass: pass, prompt: promptIds.map(Int32.init), options: GenerationOptions(
            maxTokens: 24, sampling: .greedy, stopTokens: stops))
        XCTAssertEqual(result.tokens.map(Int.init), expected.answer_ids)
        XCTAssertEqual(tokenizer.decode(result.tokens.map(Int.init), skipSpecialTokens: true), "The capital of France is Paris.")
        XCTAssertEqual(result.stopReason, .stopToken(Int32(tokenizer.tokenId(for: "<|im_end|>") ?? -1)))
    }
}
