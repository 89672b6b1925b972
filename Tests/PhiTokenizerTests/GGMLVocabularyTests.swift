import Foundation
import PhiTokenizer
import TestSupport
import XCTest

/// llama.cpp's tokenizer test cases (`ggml-vocab-*.gguf.inp/.out`, 46 each), through
/// tokenizer.json and, for Phi-3, through the GGUF vocabulary.
final class GGMLVocabularyTests: XCTestCase {
    /// The cases of an `.inp`/`.out` pair: inputs separated by `\n__ggml_vocab_test__\n`, ids one line each.
    static func cases(_ stem: String) throws -> [(text: String, ids: [Int])] {
        let inputs = try String(contentsOf: TokenizerFixtures.asset(stem + ".inp"), encoding: .utf8)
            .components(separatedBy: "\n__ggml_vocab_test__\n")
        let outputs = try String(contentsOf: TokenizerFixtures.asset(stem + ".out"), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(inputs.last, "", "the .inp file ends with a separator")
        let texts = inputs.dropLast()
        XCTAssertEqual(texts.count, 46)
        return zip(texts, outputs).map { text, line in
            (text, line.split(separator: " ").map { Int($0)! })
        }
    }

    func check(_ tokenizer: Tokenizer, _ stem: String) throws {
        var failures = 0
        for (text, ids) in try Self.cases(stem) {
            let encoded = tokenizer.encode(text, addSpecialTokens: false)
            if encoded != ids {
                failures += 1
                XCTFail("\(stem): \(text.debugDescription): got \(encoded), expected \(ids)")
            }
        }
        XCTAssertEqual(failures, 0)
    }

    func testPhi3TokenizerJSON() throws {
        try check(TokenizerFixtures.tokenizer("phi3"), "phi3/ggml-vocab-phi-3.gguf")
    }

    func testPhi3GGUFVocabulary() throws {
        try check(TokenizerFixtures.tokenizer("phi3-gguf"), "phi3/ggml-vocab-phi-3.gguf")
    }

    func testPhi4MiniTokenizerJSON() throws {
        try check(TokenizerFixtures.tokenizer("phi4mini"), "phi4mini/ggml-vocab-gpt-4o.gguf")
    }
}
