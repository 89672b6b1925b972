import Foundation
import TestSupport
import XCTest

/// Runs the built `phi-gpu` binary (found beside the test bundle) on whole command lines.
enum CLIRunner {
    /// What one run printed and returned.
    struct Output {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// The `phi-gpu` executable built with the tests.
    static func binary() throws -> URL {
        try Executables.built("phi-gpu", besideBundleOf: BundleMarker.self)
    }

    /// Runs `phi-gpu arguments…` with `stdin` as its standard input and waits for it (at most `timeout` s).
    static func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:],
                    timeout: TimeInterval = 300) throws -> Output {
        var env = ProcessInfo.processInfo.environment
        env["HF_HUB_OFFLINE"] = "1"  // tests never touch the network
        env["PHI_GPU_DEVICE"] = nil
        for (key, value) in environment { env[key] = value }
        let result = try Executables.spawn(try binary(), arguments, environment: env, stdin: Data((stdin ?? "").utf8),
                                           timeout: timeout)
        return Output(status: result.status, stdout: String(decoding: result.stdout, as: UTF8.self),
                      stderr: String(decoding: result.stderr, as: UTF8.self))
    }

    /// Runs and decodes standard output as JSON, failing with the output when the run fails.
    static func json<T: Decodable>(_ type: T.Type, _ arguments: [String], file: StaticString = #filePath,
                                   line: UInt = #line) throws -> T {
        let output = try run(arguments)
        XCTAssertEqual(output.status, 0, "phi-gpu \(arguments.joined(separator: " ")) failed: \(output.stderr)", file: file, line: line)
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(T.self, from: Data(output.stdout.utf8))
    }
}

private final class BundleMarker {}

/// The models the CLI tests run.
enum CLIModels {
    /// Tests/Fixtures/tiny-phi3.5-4bit with the Phi-3 tokenizer files from the shared assets,
    /// copied into a fresh temporary directory (the fixture ships without tokenizer files).
    static func tinyPhi35() throws -> URL {
        let fixture = try TestPaths.require(TestPaths.fixtures.appendingPathComponent("tiny-phi3.5-4bit"),
                                            hint: "run python3 Scripts/fixtures/make_tiny_models.py")
        let assets = try TestPaths.require(TestPaths.sharedAssets.appendingPathComponent("phi3/tokenizer.json"),
                                           hint: "set PHI_GPU_ASSETS to the shared tokenizer assets").deletingLastPathComponent()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("phi-gpu-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: fixture.path) {
            try FileManager.default.copyItem(at: fixture.appendingPathComponent(name), to: directory.appendingPathComponent(name))
        }
        for name in ["tokenizer.json", "tokenizer_config.json"] {
            try FileManager.default.copyItem(at: assets.appendingPathComponent(name), to: directory.appendingPathComponent(name))
        }
        return directory
    }

    /// The SmolLM2-135M-Instruct GGUF.
    static func smolLM2() throws -> URL {
        try TestPaths.require(TestPaths.smolLM2, hint: "run bash Scripts/fetch-smollm2.sh")
    }
}
