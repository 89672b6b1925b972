import Foundation
import PhiFormats
import PhiTokenizer
import TestSupport

/// The tokenizers the tests compare, each loaded once per test run.
enum TokenizerFixtures {
    static let assetHint = "the shared tokenizer assets live in ../shared/assets (or set PHI_GPU_ASSETS)"
    static let smolHint = "run `bash Scripts/fetch-smollm2.sh` (or set PHI_GPU_SMOLLM2)"

    static func asset(_ path: String) throws -> URL {
        try TestPaths.require(TestPaths.sharedAssets.appendingPathComponent(path), hint: assetHint)
    }

    private static let cache = Cache()

    /// "phi3", "phi4mini" (tokenizer.json), "phi3-gguf", "smollm2" (GGUF).
    static func tokenizer(_ name: String) throws -> Tokenizer {
        try cache.get(name) {
            switch name {
            case "phi3": return try Tokenizer.load(directory: try asset("phi3"))
            case "phi4mini": return try Tokenizer.load(directory: try asset("phi4mini"))
            case "phi3-gguf":
                return try Tokenizer(gguf: GGUFFile(contentsOf: try asset("phi3/ggml-vocab-phi-3.gguf")))
            case "smollm2":
                return try Tokenizer(gguf: GGUFFile(contentsOf: try TestPaths.require(TestPaths.smolLM2, hint: smolHint)))
            default: throw MissingTestData(description: "no test tokenizer named \(name)")
            }
        }
    }

    /// The committed corpus, `Tests/Fixtures/tokenizer/`.
    static let directory = TestPaths.fixtures.appendingPathComponent("tokenizer")

    static func json<T: Decodable>(_ name: String, as type: T.Type) throws -> T {
        let url = try TestPaths.require(directory.appendingPathComponent(name),
                                        hint: "run `python3 Scripts/tokenizer/make_fixtures.py`")
        return try JSONDecoder().decode(T.self, from: Data(contentsOf: url))
    }

    private final class Cache: @unchecked Sendable {
        private let lock = NSLock()
        private var tokenizers: [String: Tokenizer] = [:]

        func get(_ name: String, _ make: () throws -> Tokenizer) throws -> Tokenizer {
            lock.lock()
            defer { lock.unlock() }
            if let tokenizer = tokenizers[name] { return tokenizer }
            let tokenizer = try make()
            tokenizers[name] = tokenizer
            return tokenizer
        }
    }
}
