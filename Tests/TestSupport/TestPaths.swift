import Foundation

/// Where tests find their data: committed fixtures, the shared tokenizer assets, the SmolLM2 GGUF.
public enum TestPaths {
    /// The package's root directory (found from this file's path).
    public static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `Tests/Fixtures`: small committed fixtures (tiny checkpoints, expected values).
    public static let fixtures: URL = packageRoot.appendingPathComponent("Tests/Fixtures")

    /// True when running under CI (`CI=true`), where missing data fails rather than skips.
    public static var isCI: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    /// The shared tokenizer assets: `$PHI_GPU_ASSETS`, else `../shared/assets` beside the package.
    public static var sharedAssets: URL {
        if let path = ProcessInfo.processInfo.environment["PHI_GPU_ASSETS"] { return URL(fileURLWithPath: path) }
        return packageRoot.deletingLastPathComponent().appendingPathComponent("shared/assets")
    }

    /// The SmolLM2-135M-Instruct Q4_1 GGUF: `$PHI_GPU_SMOLLM2`, else `.models/` in the package,
    /// where `Scripts/fetch-smollm2.sh` puts it.
    public static var smolLM2: URL {
        if let path = ProcessInfo.processInfo.environment["PHI_GPU_SMOLLM2"] { return URL(fileURLWithPath: path) }
        return packageRoot.appendingPathComponent(".models/SmolLM2-135M-Instruct.Q4_1.gguf")
    }

    /// Returns `url` if it exists; otherwise throws a message that says how to get it.
    public static func require(_ url: URL, hint: String) throws -> URL {
        guard FileManager.default.fileExists(atPath: url.path) else {
            throw MissingTestData(description: "missing test data \(url.path): \(hint)")
        }
        return url
    }
}

/// Thrown when a test's data is absent; the message says how to get it.
public struct MissingTestData: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}
