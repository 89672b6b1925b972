import Foundation
import PhiTokenizer
import TestSupport
import XCTest

/// Added tokens, BOS/EOS configuration and streaming, on the real tokenizers.
final class SpecialTokenTests: XCTestCase {
    func testPhi3SpecialsSwallowTheNewlineAfterThem() throws {
        let tokenizer = try TokenizerFixtures.tokenizer("phi3")
        XCTAssertEqual(tokenizer.tokenId(for: "<|user|>"), 32010)
        XCTAssertEqual(tokenizer.tokenId(for: "<|end|>"), 32007)
        let parsed = tokenizer.encode("<|user|>\nHi<|end|>\n", addSpecialTokens: false, parseSpecial: true)
        XCTAssertEqual(parsed.first, 32010)
        XCTAssertEqual(parsed.last, 32007)
        XCTAssertEqual(tokenizer.decode(parsed), "<|user|> Hi<|end|>")  // as the reference decodes it
        let plain = tokenizer.encode("<|user|>", addSpecialTokens: false, parseSpecial: false)
        XCTAssertFalse(plain.contains(32010), "without parseSpecial the text stays text: \(plain)")
        XCTAssertEqual(tokenizer.decode(plain), "<|user|>")
        XCTAssertEqual(tokenizer.decode(parsed, skipSpecialTokens: true), "Hi")
    }

    func testBeginAndEndOfSequence() throws {
        let json = try TokenizerFixtures.tokenizer("phi3")
        XCTAssertEqual(json.bosId, 1)
        XCTAssertFalse(json.addsBOS, "Phi-3.5's tokenizer_config.json sets add_bos_token false")
        XCTAssertEqual(json.eosIds.first, 32000)
        let gguf = try TokenizerFixtures.tokenizer("phi3-gguf")
        XCTAssertTrue(gguf.addsBOS)
        XCTAssertEqual(gguf.encode("Hi").first, 1)
        XCTAssertEqual(Array(gguf.encode("Hi").dropFirst()), gguf.encode("Hi", addSpecialTokens: false))
        XCTAssertEqual(gguf.eosIds, [32000, 32007])
        let smol = try TokenizerFixtures.tokenizer("smollm2")
        XCTAssertEqual(smol.bosId, 1)
        XCTAssertFalse(smol.addsBOS)
        XCTAssertEqual(smol.eosIds, [2, 0], "<|im_end|>, then <|endoftext|> as llama.cpp ends generation on it")
        let phi4 = try TokenizerFixtures.tokenizer("phi4mini")
        XCTAssertEqual(phi4.eosIds, [199999])
        XCTAssertEqual(phi4.tokenId(for: "<|end|>"), 200020)
    }

    func testStreamingEmitsOnlyWholeCharacters() throws {
        let phi4 = try TokenizerFixtures.tokenizer("phi4mini")
        let text = "a🦙é中"
        var stream = StreamingDetokenizer(tokenizer: phi4)
        var chunks: [String] = []
        for byte in text.utf8 {  // one single-byte token at a time
            let id = try XCTUnwrap(phi4.tokenId(for: String(ByteLevelCharacters.character(of: byte))))
            chunks.append(stream.append(id))
        }
        chunks.append(stream.finish())
        XCTAssertEqual(chunks.joined(), text)
        XCTAssertEqual(chunks.filter { !$0.isEmpty }, ["a", "🦙", "é", "中"])

        let phi3 = try TokenizerFixtures.tokenizer("phi3")
        var spStream = StreamingDetokenizer(tokenizer: phi3)
        let ids = phi3.encode(" Hello world", addSpecialTokens: false)
        let pieces = ids.map { spStream.append($0) } + [spStream.finish()]
        XCTAssertEqual(pieces.joined(), phi3.decode(ids))
        XCTAssertEqual(ids.first, 29871, "the prepended ▁ and the text's space: ▁ then ▁Hello")
        XCTAssertEqual(pieces.joined(), " Hello world", "only the very first leading space is dropped")
        XCTAssertEqual(pieces[1], " Hello")
    }
}

/// GPT-2's byte-to-character table, restated for the test (printable Latin-1 stays, others shift to U+0100+).
enum ByteLevelCharacters {
    static func character(of byte: UInt8) -> Character {
        var shifted: UInt32 = 256
        for value in 0..<256 {
            let printable = (0x21...0x7E).contains(value) || (0xA1...0xAC).contains(value) || (0xAE...0xFF).contains(value)
            if value == Int(byte) { return Character(Unicode.Scalar(printable ? UInt32(value) : shifted)!) }
            if !printable { shifted += 1 }
        }
        return " "
    }
}
