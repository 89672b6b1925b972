import Foundation
import PhiFormats
import PhiModel
import TestSupport
import XCTest

/// Bad checkpoints: each fails with an error naming the file and tensor or key, never a crash.
final class CheckpointErrorTests: XCTestCase {
    var scratch: URL!

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("phi-gpu-formats-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: scratch)
    }

    /// A writable copy of a fixture directory.
    func copyOfFixture(_ name: String) throws -> URL {
        let source = try TestPaths.require(TestPaths.fixtures.appendingPathComponent(name),
                                           hint: "run Scripts/fixtures/make_tiny_models.py")
        let destination = scratch.appendingPathComponent(name)
        try FileManager.default.copyItem(at: source, to: destination)
        return destination
    }

    func editConfig(_ directory: URL, _ edit: (inout [String: Any]) -> Void) throws {
        let url = directory.appendingPathComponent("config.json")
        var object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        edit(&object)
        try JSONSerialization.data(withJSONObject: object).write(to: url)
    }

    func assertLoadFails(_ url: URL, mentioning parts: [String], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try CheckpointLoader.load(from: url), file: file, line: line) { error in
            for part in parts {
                XCTAssertTrue("\(error)".contains(part), "'\(error)' should mention \(part)", file: file, line: line)
            }
        }
    }

    func testConfigErrorsNameFileAndKey() throws {
        let directory = try copyOfFixture("tiny-phi4-mini-4bit")
        try editConfig(directory) { $0["model_type"] = "gpt2" }
        assertLoadFails(directory, mentioning: ["config.json", "model_type", "gpt2"])
        try editConfig(directory) { $0["model_type"] = "phi3"; $0["quantization"] = ["bits": 4, "group_size": 64, "mode": "mxfp4"] }
        assertLoadFails(directory, mentioning: ["config.json", "quantization.mode", "mxfp4"])
        try editConfig(directory) { $0["quantization"] = ["bits": 8, "group_size": 64] }
        assertLoadFails(directory, mentioning: ["model.safetensors", "model.embed_tokens.weight", "shape"])
        try editConfig(directory) { $0["quantization"] = ["bits": 4, "group_size": 64]; $0["hidden_size"] = 128; $0["num_attention_heads"] = 8 }
        assertLoadFails(directory, mentioning: ["model.embed_tokens.weight"])
        try editConfig(directory) { $0["hidden_size"] = 64; $0["num_attention_heads"] = 4; $0["num_hidden_layers"] = 3 }
        assertLoadFails(directory, mentioning: ["model.layers.2.", "missing"])
        try editConfig(directory) { $0["num_hidden_layers"] = 2; $0["tie_word_embeddings"] = false }
        assertLoadFails(directory, mentioning: ["lm_head.weight", "missing"])
        try editConfig(directory) { $0["tie_word_embeddings"] = true; $0["rope_scaling"] = ["type": "longrope", "short_factor": [1.0], "long_factor": [1.0]] }
        assertLoadFails(directory, mentioning: ["config.json", "rope_scaling.short_factor", "6 expected"])
        try Data("{\"model_type\": ".utf8).write(to: directory.appendingPathComponent("config.json"))
        assertLoadFails(directory, mentioning: ["config.json", "not valid JSON"])
        try FileManager.default.removeItem(at: directory.appendingPathComponent("config.json"))
        assertLoadFails(directory, mentioning: ["config.json", "missing"])
        assertLoadFails(scratch.appendingPathComponent("nothing-here"), mentioning: ["nothing-here", "does not exist"])
    }

    func testShardIndexErrors() throws {
        let directory = try copyOfFixture("tiny-phi4-mini-4bit")
        let index = directory.appendingPathComponent("model.safetensors.index.json")
        var object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: index)) as? [String: Any])
        var map = try XCTUnwrap(object["weight_map"] as? [String: Any])
        map["model.norm.weight"] = "model-00002-of-00002.safetensors"
        object["weight_map"] = map
        try JSONSerialization.data(withJSONObject: object).write(to: index)
        assertLoadFails(directory, mentioning: ["model-00002-of-00002.safetensors", "missing"])
        map["model.norm.weight"] = "../model.safetensors"
        object["weight_map"] = map
        try JSONSerialization.data(withJSONObject: object).write(to: index)
        assertLoadFails(directory, mentioning: ["model.safetensors.index.json", "model.norm.weight"])
    }

    func testGGUFErrors() throws {
        let source = try TestPaths.require(TestPaths.fixtures.appendingPathComponent("tiny-gguf/types.gguf"),
                                           hint: "run Scripts/fixtures/make_gguf_references.py")
        // types.gguf says llama but has no llama.* hyperparameters.
        assertLoadFails(source, mentioning: ["types.gguf", "llama.embedding_length", "missing"])
        var bytes = try Data(contentsOf: TestPaths.fixtures.appendingPathComponent("tiny-gguf/tiny-phi3-q8.gguf"))
        let architecture = try XCTUnwrap(bytes.range(of: Data("phi3".utf8)))
        bytes.replaceSubrange(architecture, with: Data("gpt9".utf8))
        let renamed = scratch.appendingPathComponent("renamed.gguf")
        try bytes.write(to: renamed)
        assertLoadFails(renamed, mentioning: ["renamed.gguf", "general.architecture", "gpt9"])
    }
}
