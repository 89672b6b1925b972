import Foundation
import PhiTokenizer
import TestSupport
import XCTest

/// Chat renderings against transformers' `apply_chat_template` (Tests/Fixtures/tokenizer/chat.json).
final class ChatTemplateTests: XCTestCase {
    struct Message: Decodable { let role: String; let content: String; let tools: String? }
    struct Case: Decodable {
        let format: String
        let tokenizer: String
        let conversation: Int
        let add_generation_prompt: Bool
        let text: String
        let ids: [Int]
    }
    struct Fixture: Decodable {
        let templates: [String: String]
        let conversations: [[Message]]
        let cases: [Case]
    }

    func testRenderingsEqualReference() throws {
        let fixture = try TokenizerFixtures.json("chat.json", as: Fixture.self)
        XCTAssertGreaterThanOrEqual(fixture.cases.count, 40)
        for item in fixture.cases {
            let tokenizer = try TokenizerFixtures.tokenizer(item.tokenizer)
            let template = try XCTUnwrap(fixture.templates[item.format])
            let format = try ChatTemplate.recognize(template, source: item.format)
            XCTAssertEqual(format.rawValue, item.format)
            let chat = ChatTemplate(format: format, bosToken: tokenizer.bosToken ?? "", eosToken: tokenizer.eosToken ?? "")
            let messages = fixture.conversations[item.conversation].map {
                ChatMessage(role: $0.role, content: $0.content, tools: $0.tools)
            }
            let text = try chat.render(messages: messages, addGenerationPrompt: item.add_generation_prompt)
            let label = "\(item.format) conversation \(item.conversation) generation prompt \(item.add_generation_prompt)"
            XCTAssertEqual(text, item.text, label)
            XCTAssertEqual(tokenizer.encode(text, addSpecialTokens: false, parseSpecial: true), item.ids, label)
        }
    }

    func testTemplateFromTokenizerFiles() throws {
        XCTAssertEqual(try ChatTemplate(tokenizer: TokenizerFixtures.tokenizer("phi3")).format, .phi3)
        XCTAssertEqual(try ChatTemplate(tokenizer: TokenizerFixtures.tokenizer("phi4mini")).format, .phi4Mini)
        XCTAssertEqual(try ChatTemplate(tokenizer: TokenizerFixtures.tokenizer("phi3-gguf")).format, .phi3Legacy)
        XCTAssertEqual(try ChatTemplate(tokenizer: TokenizerFixtures.tokenizer("smollm2")).format, .smolLM2)
        let override = try ChatTemplate(tokenizer: TokenizerFixtures.tokenizer("smollm2"), format: .chatML)
        XCTAssertEqual(try override.render(messages: [ChatMessage(role: "user", content: "hi")], addGenerationPrompt: true),
                       "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n")
    }

    func testUnknownTemplateIsAnError() {
        XCTAssertThrowsError(try ChatTemplate.recognize("{{ messages }}", source: "my.jinja")) { error in
            let message = "\(error)"
            XCTAssertTrue(message.contains("my.jinja") && message.contains("unknown chat template"), message)
        }
    }

    func testToolsArgumentGoesIntoTheSystemTurn() throws {
        let chat = ChatTemplate(format: .phi4Mini, eosToken: "<|endoftext|>")
        let text = try chat.render(messages: [ChatMessage(role: "system", content: "S"), ChatMessage(role: "user", content: "U")],
                                   addGenerationPrompt: true, tools: "[]")
        XCTAssertEqual(text, "<|system|>S<|tool|>[]<|/tool|><|end|><|user|>U<|end|><|assistant|>")
        XCTAssertThrowsError(try chat.render(messages: [ChatMessage(role: "user", content: "U")], addGenerationPrompt: true, tools: "[]"))
        XCTAssertThrowsError(try ChatTemplate(format: .phi3).render(messages: [], addGenerationPrompt: true, tools: "[]"))
    }
}
