import Foundation

/// A model phi-gpu knows by a short name.
public struct RegisteredModel: Sendable, Equatable {
    /// The short name users type, e.g. `phi-3.5-mini`.
    public let name: String
    /// The hub repository, `org/name`.
    public let repository: String
    /// Strings that end generation besides the checkpoint's own EOS tokens (as MLX's registry adds).
    public let extraStopStrings: [String]
}

/// Where a model's files are.
public enum ModelSource: Sendable, Equatable {
    /// A hub repository (`org/name`) at a branch, tag or commit.
    case hub(repository: String, revision: String)
    /// A directory holding an MLX/safetensors checkpoint.
    case localDirectory(URL)
    /// A single GGUF file.
    case ggufFile(URL)
}

/// What a name given on the command line resolved to.
public struct ModelReference: Sendable, Equatable {
    public let source: ModelSource
    /// Stop strings to add to the checkpoint's EOS tokens (empty for models outside the registry).
    public let extraStopStrings: [String]
}

/// A model name that is none of the forms phi-gpu accepts.
public enum ModelNameError: Error, Equatable, CustomStringConvertible, LocalizedError {
    case unknownName(String, known: [String])
    case noSuchPath(String)
    case notAModelFile(String)
    case invalidRevision(String)
    case revisionForLocalModel(String)

    public var description: String {
        switch self {
        case .unknownName(let name, let known):
            return "unknown model '\(name)': give one of \(known.joined(separator: ", ")), a hub repository "
                + "id such as mlx-community/Phi-3.5-mini-instruct-4bit, a checkpoint directory or a .gguf file"
        case .noSuchPath(let path):
            return "no such file or directory: \(path); check the path, or give a registered name or hub id"
        case .notAModelFile(let path):
            return "\(path) is a file but not a .gguf file; give a .gguf file or a checkpoint directory "
                + "(config.json, *.safetensors, tokenizer.json)"
        case .invalidRevision(let revision):
            return "invalid revision '\(revision)': use a branch, tag or commit hash (letters, digits, . _ - /)"
        case .revisionForLocalModel(let path):
            return "--revision applies to hub models only, but \(path) is a local path; drop --revision"
        }
    }

    public var errorDescription: String? { description }
}

/// The short model names phi-gpu knows, and the resolution of any name a user gives.
public enum ModelRegistry {
    /// Registered models; the first is the default.
    public static let models: [RegisteredModel] = [
        RegisteredModel(
            name: "phi-3.5-mini", repository: "mlx-community/Phi-3.5-mini-instruct-4bit",
            extraStopStrings: ["<|end|>"]),
        RegisteredModel(
            name: "phi-4-mini", repository: "mlx-community/Phi-4-mini-instruct-4bit",
            extraStopStrings: ["<|end|>"]),
    ]

    /// The model used when none is named: `phi-3.5-mini`.
    public static var defaultModel: RegisteredModel { models[0] }

    /// The registered model with this short name or repository id (case-insensitive).
    public static func entry(named name: String) -> RegisteredModel? {
        let key = name.lowercased()
        return models.first { $0.name == key || $0.repository.lowercased() == key }
    }

    /// Resolves, in this order: a registered short name, an existing directory or `.gguf` file,
    /// a hub repository id `org/name`. `revision` (default `main`) applies to hub models only.
    public static func resolve(_ name: String, revision: String? = nil) throws -> ModelReference {
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        if let revision { try validateRevision(revision) }
        if let entry = entry(named: trimmed), !trimmed.contains("/") || !FileManager.default.fileExists(atPath: trimmed) {
            return ModelReference(
                source: .hub(repository: entry.repository, revision: revision ?? "main"),
                extraStopStrings: entry.extraStopStrings)
        }
        let path = expandingTilde(trimmed)
        var isDirectory: ObjCBool = false
        if !trimmed.isEmpty, FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            if revision != nil { throw ModelNameError.revisionForLocalModel(trimmed) }
            let url = URL(fileURLWithPath: path).standardizedFileURL
            if isDirectory.boolValue { return ModelReference(source: .localDirectory(url), extraStopStrings: []) }
            guard url.pathExtension.lowercased() == "gguf" else { throw ModelNameError.notAModelFile(trimmed) }
            return ModelReference(source: .ggufFile(url), extraStopStrings: [])
        }
        let looksLikePath = ["/", "./", "../", "~"].contains { trimmed.hasPrefix($0) }
            || trimmed.lowercased().hasSuffix(".gguf")
        if looksLikePath { throw ModelNameError.noSuchPath(trimmed) }
        if isValidRepositoryID(trimmed) {
            return ModelReference(
                source: .hub(repository: trimmed, revision: revision ?? "main"), extraStopStrings: [])
        }
        throw ModelNameError.unknownName(trimmed, known: models.map(\.name))
    }

    /// `org/name` as the hub allows it: letters, digits, `.`, `_`, `-`; no `--` or `..`; parts
    /// neither starting nor ending with `.` or `-`; the name at most 96 characters.
    public static func isValidRepositoryID(_ id: String) -> Bool {
        let parts = id.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !id.contains("--"), !id.contains(".."), parts[1].count <= 96 else { return false }
        return parts.allSatisfy { part in
            guard let first = part.first, let last = part.last, !".-".contains(first), !".-".contains(last)
            else { return false }
            return part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }
        }
    }

    /// Throws unless `revision` is a plausible branch, tag or commit (used in URLs and cache paths).
    public static func validateRevision(_ revision: String) throws {
        let parts = revision.split(separator: "/", omittingEmptySubsequences: false)
        let valid =
            !revision.isEmpty && revision.utf8.count <= 255
            && parts.allSatisfy { part in
                !part.isEmpty && part != "." && part != ".."
                    && part.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }
            }
        if !valid { throw ModelNameError.invalidRevision(revision) }
    }

    private static func expandingTilde(_ path: String) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        let home = FileManager.default.homeDirectoryForCurrentUser.path
        return path == "~" ? home : home + "/" + path.dropFirst(2)
    }
}
