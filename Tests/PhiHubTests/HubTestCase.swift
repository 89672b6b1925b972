import Foundation
import TestSupport
import XCTest

@testable import PhiHub

/// The shared fixture of the hub tests: a `FakeHub` serving one small repository (a sharded MLX
/// checkpoint plus files a model does not need) and an empty temporary cache.
class HubTestCase: XCTestCase {
    static let repositoryID = "test-org/Tiny-Model-4bit"
    static let commit = "0123456789abcdef0123456789abcdef01234567"

    var hub: FakeHub!
    var cacheDirectory: URL!
    /// Content of each file of the fake repository.
    var contents: [String: [UInt8]] = [:]

    override func setUpWithError() throws {
        var random = SeededRandom(seed: 7)
        contents = [
            "config.json": Array("{\"model_type\": \"phi3\", \"hidden_size\": 64}".utf8),
            "tokenizer.json": Array("{\"model\": {\"type\": \"BPE\"}}".utf8),
            "tokenizer_config.json": Array("{\"eos_token\": \"<|endoftext|>\"}".utf8),
            "model-00001-of-00002.safetensors": (0..<300_000).map { _ in UInt8.random(in: 0...255, using: &random) },
            "model-00002-of-00002.safetensors": (0..<70_001).map { _ in UInt8.random(in: 0...255, using: &random) },
            "model.safetensors.index.json": Array(
                ("{\"metadata\": {}, \"weight_map\": {\"a.weight\": \"model-00001-of-00002.safetensors\", "
                    + "\"b.weight\": \"model-00002-of-00002.safetensors\"}}").utf8),
            "README.md": Array("# not needed".utf8),
            "pytorch_model.bin": [1, 2, 3],
            "onnx/model.onnx": [4, 5, 6],
        ]
        hub = try FakeHub()
        hub.add(
            FakeHub.Repository(
                id: Self.repositoryID, commit: Self.commit, files: contents,
                largeFiles: ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "pytorch_model.bin"]))
        cacheDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("phi-hub-test-\(UUID().uuidString)", isDirectory: true)
    }

    override func tearDownWithError() throws {
        hub.stop()
        try? FileManager.default.removeItem(at: cacheDirectory)
    }

    func makeClient(token: String? = nil, offline: Bool = false) -> HubClient {
        HubClient(
            configuration: HubConfiguration(
                endpoint: hub.endpoint, cacheDirectory: cacheDirectory, token: token, offline: offline),
            retryPolicy: RetryPolicy(maxAttempts: 3, initialDelay: 0.01, maxDelay: 0.05))
    }

    static let neededFiles = [
        "config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
        "model.safetensors.index.json", "tokenizer.json", "tokenizer_config.json",
    ]
}
