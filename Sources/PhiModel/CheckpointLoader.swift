import Foundation
import PhiFormats

/// A model's weights in the engine layout, with where they came from and its stop tokens.
public struct Checkpoint: Sendable {
    /// The file format the weights were read from.
    public enum Source: Sendable {
        /// An MLX / Hugging Face directory (config.json, safetensors, tokenizer.json).
        case mlxDirectory(URL)
        /// A GGUF file (its metadata also holds the tokenizer).
        case gguf(GGUFFile)
    }

    public var weights: ModelWeights
    public var source: Source
    /// The checkpoint's directory: where `tokenizer.json` / `tokenizer_config.json` are for an
    /// MLX checkpoint; the GGUF file's directory otherwise.
    public var directory: URL
    /// End-of-sequence token ids: generation_config.json's (else config.json's) `eos_token_id`,
    /// or a GGUF's `tokenizer.ggml.eos_token_id` (and `eot_token_id`).
    public var eosTokenIds: [Int]

    public init(weights: ModelWeights, source: Source, directory: URL, eosTokenIds: [Int]) {
        self.weights = weights
        self.source = source
        self.directory = directory
        self.eosTokenIds = eosTokenIds
    }
}

/// Loads a checkpoint in whatever format it comes: an MLX directory or a `.gguf` file.
public enum CheckpointLoader {
    /// Loads `url` (a directory with config.json, or a GGUF file) into the engine layout.
    /// `progress` is called with the fraction done, from 0 to 1. Errors name the file and tensor.
    public static func load(from url: URL, progress: ((Double) -> Void)? = nil) throws -> Checkpoint {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw FormatError(file: url, "does not exist; give an MLX checkpoint directory or a .gguf file")
        }
        progress?(0)
        if isDirectory.boolValue {
            return try MLXCheckpointLoader.load(directory: url, progress: progress)
        }
        return try GGUFCheckpointLoader.load(file: url, progress: progress)
    }
}
