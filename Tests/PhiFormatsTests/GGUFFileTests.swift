import Foundation
import PhiFormats
import TestSupport
import XCTest

/// GGUF header and metadata reading, against values printed by the `gguf` PyPI package's GGUFReader.
final class GGUFFileTests: XCTestCase {
    func testReadsPhi3VocabularyFile() throws {
        let url = try TestPaths.require(
            TestPaths.sharedAssets.appendingPathComponent("phi3/ggml-vocab-phi-3.gguf"),
            hint: "the shared tokenizer assets (../shared/assets or $PHI_GPU_ASSETS)")
        let start = Date()
        let file = try GGUFFile(contentsOf: url)
        let seconds = Date().timeIntervalSince(start)
        XCTAssertLessThan(seconds, 2, "reading a 32k vocabulary should be fast")

        XCTAssertEqual(file.version, 3)
        XCTAssertEqual(file.tensors.count, 0)
        XCTAssertEqual(file.metadata.count, 26)
        XCTAssertEqual(file.architecture, "phi3")
        XCTAssertEqual(file.metadata["phi3.context_length"]?.intValue, 4096)
        XCTAssertEqual(file.metadata["phi3.rope.dimension_count"]?.intValue, 96)
        XCTAssertEqual(file.metadata["phi3.rope.freq_base"]?.floatValue, 10000)
        XCTAssertEqual(file.metadata["phi3.attention.layer_norm_rms_epsilon"]?.floatValue, 9.999999747378752e-06)
        XCTAssertEqual(file.metadata["tokenizer.ggml.eos_token_id"]?.intValue, 32000)
        XCTAssertEqual(file.metadata["tokenizer.ggml.add_bos_token"]?.boolValue, true)
        XCTAssertEqual(file.metadata["tokenizer.ggml.add_eos_token"]?.boolValue, false)
        XCTAssertEqual(file.metadata["tokenizer.ggml.model"]?.stringValue, "llama")
        XCTAssertTrue(file.metadata["tokenizer.chat_template"]?.stringValue?.hasPrefix("{{ bos_token }}") ?? false)

        let tokens = try XCTUnwrap(file.metadata["tokenizer.ggml.tokens"]?.stringArray)
        let scores = try XCTUnwrap(file.metadata["tokenizer.ggml.scores"]?.floatArray)
        let types = try XCTUnwrap(file.metadata["tokenizer.ggml.token_type"]?.intArray)
        XCTAssertEqual(tokens.count, 32064)
        XCTAssertEqual(scores.count, 32064)
        XCTAssertEqual(types.count, 32064)
        let expected: [(Int, String, Float, Int)] = [
            (3, "<0x00>", 0, 6), (259, "\u{2581}\u{2581}", -1e9, 1), (1000, "ied", -741, 1),
            (31999, "给", -31740, 1), (32000, "<|endoftext|>", -1000, 3), (32007, "<|end|>", -1000, 3),
            (32010, "<|user|>", -1000, 3), (32063, "[PAD32063]", -10000, 2),
        ]
        for (id, token, score, type) in expected {
            XCTAssertEqual(tokens[id], token, "token \(id)")
            XCTAssertEqual(scores[id], score, "score \(id)")
            XCTAssertEqual(types[id], type, "type \(id)")
        }
    }

    func testRejectsNonGGUFAndOtherVersions() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("phi-gpu-gguf-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        let notGGUF = directory.appendingPathComponent("not.gguf")
        try Data("hello world, not a gguf".utf8).write(to: notGGUF)
        XCTAssertThrowsError(try GGUFFile(contentsOf: notGGUF)) { error in
            XCTAssertTrue("\(error)".contains("not.gguf"), "\(error)")
            XCTAssertTrue("\(error)".contains("not a GGUF"), "\(error)")
        }

        var version1 = Data("GGUF".utf8)
        version1.append(contentsOf: [1, 0, 0, 0] + [UInt8](repeating: 0, count: 16))
        let old = directory.appendingPathComponent("old.gguf")
        try version1.write(to: old)
        XCTAssertThrowsError(try GGUFFile(contentsOf: old)) { error in
            XCTAssertTrue("\(error)".contains("version 1"), "\(error)")
        }

        let empty = directory.appendingPathComponent("empty.gguf")
        try Data().write(to: empty)
        XCTAssertThrowsError(try GGUFFile(contentsOf: empty)) { error in
            XCTAssertTrue("\(error)".contains("empty"), "\(error)")
        }
        XCTAssertThrowsError(try GGUFFile(contentsOf: directory.appendingPathComponent("absent.gguf")))
    }

    func testLargeVocabularyIsFast() throws {
        // A GGUF v3 with a 200,064-token string array (Phi-4-mini's vocabulary size), no tensors.
        var bytes = Data("GGUF".utf8)
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
        func appendString(_ string: String) { append(UInt64(string.utf8.count)); bytes.append(contentsOf: Array(string.utf8)) }
        append(UInt32(3)); append(UInt64(0)); append(UInt64(1))
        appendString("tokenizer.ggml.tokens"); append(UInt32(9)); append(UInt32(8)); append(UInt64(200_064))
        for id in 0..<200_064 { appendString("tok\(id)") }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("phi-gpu-vocab-\(UUID().uuidString).gguf")
        try bytes.write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let start = Date()
        let file = try GGUFFile(contentsOf: url)
        let tokens = try XCTUnwrap(file.metadata["tokenizer.ggml.tokens"]?.stringArray)
        XCTAssertLessThan(Date().timeIntervalSince(start), 5, "200k strings must parse in well under a few seconds, even in debug")
        XCTAssertEqual(tokens.count, 200_064)
        XCTAssertEqual(tokens[199_999], "tok199999")
        // The same file cut short must fail, naming the array.
        try bytes.prefix(bytes.count - 3).write(to: url)
        XCTAssertThrowsError(try GGUFFile(contentsOf: url)) { XCTAssertTrue("\($0)".contains("truncated"), "\($0)") }
    }
}
