import Foundation
import PhiTokenizer
import TestSupport
import XCTest

/// The committed corpus against the Rust `tokenizers` library (Scripts/tokenizer/make_fixtures.py):
/// ids, decoding, round trips and streaming, for Phi-3.5, Phi-4-mini and SmolLM2.
final class CorpusTests: XCTestCase {
    struct Expected: Decodable {
        let ids: [[Int]]
        let decoded: [String?]          // nil: the reference decodes back to the input
        let random_ids: [[Int]]
        let random_decoded: [String]
    }

    func check(_ name: String) throws {
        let tokenizer = try TokenizerFixtures.tokenizer(name)
        let strings = try TokenizerFixtures.json("corpus.json", as: [String].self)
        XCTAssertGreaterThanOrEqual(strings.count, 300)
        let expected = try TokenizerFixtures.json("expected-\(name).json", as: Expected.self)
        XCTAssertEqual(expected.ids.count, strings.count)
        var failures = 0
        for (index, text) in strings.enumerated() where failures < 10 {
            let ids = tokenizer.encode(text, addSpecialTokens: false, parseSpecial: true)
            if ids != expected.ids[index] {
                failures += 1
                XCTFail("\(name) #\(index) \(text.debugDescription): got \(ids), expected \(expected.ids[index])")
                continue
            }
            let decoded = tokenizer.decode(ids)
            XCTAssertEqual(decoded, expected.decoded[index] ?? text, "\(name) #\(index) decode")
            XCTAssertEqual(streamed(tokenizer, ids), decoded, "\(name) #\(index) streaming")
        }
        XCTAssertEqual(failures, 0, "\(name): corpus strings tokenized differently")
        for (ids, reference) in zip(expected.random_ids, expected.random_decoded) {
            XCTAssertEqual(tokenizer.decode(ids), reference, "\(name) decode \(ids)")
            XCTAssertEqual(streamed(tokenizer, ids), reference, "\(name) streaming \(ids)")
        }
    }

    /// Feeds ids one at a time; no chunk may end inside a character.
    func streamed(_ tokenizer: Tokenizer, _ ids: [Int]) -> String {
        var stream = StreamingDetokenizer(tokenizer: tokenizer)
        var text = ""
        for id in ids { text += stream.append(id) }
        return text + stream.finish()
    }

    func testPhi3() throws { try check("phi3") }
    func testPhi4Mini() throws { try check("phi4mini") }
    func testSmolLM2() throws { try check("smollm2") }
}
