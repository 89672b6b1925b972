import Foundation
import XCTest

@testable import PhiHub

final class ModelRegistryTests: XCTestCase {
    func testRegisteredNamesResolveToMLXRepositoriesWithEndStop() throws {
        XCTAssertEqual(ModelRegistry.defaultModel.name, "phi-3.5-mini")
        XCTAssertEqual(
            try ModelRegistry.resolve("phi-3.5-mini"),
            ModelReference(
                source: .hub(repository: "mlx-community/Phi-3.5-mini-instruct-4bit", revision: "main"),
                extraStopStrings: ["<|end|>"]))
        XCTAssertEqual(
            try ModelRegistry.resolve("Phi-4-Mini", revision: "v1.0"),
            ModelReference(
                source: .hub(repository: "mlx-community/Phi-4-mini-instruct-4bit", revision: "v1.0"),
                extraStopStrings: ["<|end|>"]))
        // The registry's repository id, written out, keeps the extra stop string.
        XCTAssertEqual(
            try ModelRegistry.resolve("mlx-community/Phi-4-mini-instruct-4bit").extraStopStrings, ["<|end|>"])
    }

    func testAnyHubIDResolvesToTheHub() throws {
        XCTAssertEqual(
            try ModelRegistry.resolve("HuggingFaceTB/SmolLM2-135M-Instruct", revision: "refs/pr/3"),
            ModelReference(
                source: .hub(repository: "HuggingFaceTB/SmolLM2-135M-Instruct", revision: "refs/pr/3"),
                extraStopStrings: []))
        for bad in ["org//name", "org/name/extra", "org/-name", "org/na--me", "org/na..me", "org/name.", "or g/name"] {
            XCTAssertFalse(ModelRegistry.isValidRepositoryID(bad), bad)
        }
        XCTAssertTrue(ModelRegistry.isValidRepositoryID("mlx-community/Phi-3.5-mini-instruct-4bit"))
    }

    func testLocalDirectoryAndGGUFFile() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("phi-registry-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let gguf = folder.appendingPathComponent("model.Q4_1.GGUF")
        let text = folder.appendingPathComponent("notes.txt")
        try Data([0x47, 0x47, 0x55, 0x46]).write(to: gguf)
        try Data("x".utf8).write(to: text)

        guard case .localDirectory(let directory) = try ModelRegistry.resolve(folder.path).source else {
            return XCTFail("\(folder.path) did not resolve to a directory")
        }
        XCTAssertEqual(directory.path, folder.path)
        XCTAssertEqual(try ModelRegistry.resolve(gguf.path).source, .ggufFile(gguf.standardizedFileURL))
        XCTAssertThrowsError(try ModelRegistry.resolve(text.path)) {
            XCTAssertEqual($0 as? ModelNameError, .notAModelFile(text.path))
        }
        XCTAssertThrowsError(try ModelRegistry.resolve(gguf.path, revision: "main")) {
            XCTAssertEqual($0 as? ModelNameError, .revisionForLocalModel(gguf.path))
        }
        let missing = folder.appendingPathComponent("absent.gguf").path
        XCTAssertThrowsError(try ModelRegistry.resolve(missing)) {
            XCTAssertEqual($0 as? ModelNameError, .noSuchPath(missing))
        }
        XCTAssertThrowsError(try ModelRegistry.resolve("./no-such-dir")) {
            XCTAssertEqual($0 as? ModelNameError, .noSuchPath("./no-such-dir"))
        }
    }

    func testUnknownNamesAndBadRevisionsAreClearErrors() {
        XCTAssertThrowsError(try ModelRegistry.resolve("phi-9")) { error in
            XCTAssertEqual(error as? ModelNameError, .unknownName("phi-9", known: ["phi-3.5-mini", "phi-4-mini"]))
            XCTAssertTrue("\(error)".contains("phi-3.5-mini, phi-4-mini"))
        }
        XCTAssertThrowsError(try ModelRegistry.resolve("")) {
            XCTAssertEqual($0 as? ModelNameError, .unknownName("", known: ["phi-3.5-mini", "phi-4-mini"]))
        }
        for revision in ["", "../main", "a b", "refs//x", "/main"] {
            XCTAssertThrowsError(try ModelRegistry.resolve("phi-4-mini", revision: revision)) {
                XCTAssertEqual($0 as? ModelNameError, .invalidRevision(revision))
            }
        }
    }

    func testOnlyModelFilesAreNeeded() {
        for name in ["config.json", "model.safetensors", "model-00001-of-00002.safetensors", "tokenizer.json",
            "tokenizer_config.json", "generation_config.json", "special_tokens_map.json", "chat_template.jinja",
            "model.safetensors.index.json"]
        {
            XCTAssertTrue(ModelFiles.isNeeded(name), name)
        }
        for name in ["README.md", "pytorch_model.bin", "onnx/model.safetensors", ".gitattributes", "tokenizer.model"] {
            XCTAssertFalse(ModelFiles.isNeeded(name), name)
        }
    }
}
