import Foundation
import PhiFormats

/// A parsed JSON object with typed, error-naming accessors (for config.json and friends).
struct JSONObject {
    let file: URL
    let values: [String: Any]

    static func read(_ url: URL) throws -> JSONObject {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw FormatError(file: url, "cannot be read (\(error.localizedDescription)); is the checkpoint directory complete?")
        }
        let parsed: Any
        do { parsed = try JSONSerialization.jsonObject(with: data) } catch {
            throw FormatError(file: url, "is not valid JSON (\(error.localizedDescription)); fetch it again")
        }
        guard let object = parsed as? [String: Any] else { throw FormatError(file: url, "is not a JSON object") }
        return JSONObject(file: url, values: object)
    }

    func int(_ key: String) throws -> Int? {
        guard let value = values[key], !(value is NSNull) else { return nil }
        guard let number = value as? NSNumber, let int = Int(exactly: number.doubleValue)
        else { throw FormatError(file: file, tensor: key, "is \(value), not an integer") }
        return int
    }

    func requiredInt(_ key: String, range: ClosedRange<Int> = 1...(1 << 24)) throws -> Int {
        guard let int = try int(key) else { throw FormatError(file: file, tensor: key, "is missing") }
        guard range.contains(int) else { throw FormatError(file: file, tensor: key, "is \(int), outside \(range)") }
        return int
    }

    func double(_ key: String) throws -> Double? {
        guard let value = values[key], !(value is NSNull) else { return nil }
        guard let number = value as? NSNumber, number.doubleValue.isFinite else {
            throw FormatError(file: file, tensor: key, "is \(value), not a number")
        }
        return number.doubleValue
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = values[key], !(value is NSNull) else { return nil }
        guard let bool = value as? Bool else { throw FormatError(file: file, tensor: key, "is \(value), not true or false") }
        return bool
    }

    func string(_ key: String) throws -> String? {
        guard let value = values[key], !(value is NSNull) else { return nil }
        guard let string = value as? String else { throw FormatError(file: file, tensor: key, "is \(value), not a string") }
        return string
    }

    func object(_ key: String) throws -> JSONObject? {
        guard let value = values[key], !(value is NSNull) else { return nil }
        guard let object = value as? [String: Any] else { throw FormatError(file: file, tensor: key, "is not an object") }
        return JSONObject(file: file, values: object)
    }

    func floats(_ key: String) throws -> [Float]? {
        guard let value = values[key], !(value is NSNull) else { return nil }
        guard let array = value as? [Any] else { throw FormatError(file: file, tensor: key, "is not a list of numbers") }
        return try array.map {
            guard let n = $0 as? NSNumber, n.doubleValue.isFinite else { throw FormatError(file: file, tensor: key, "holds \($0), not a number") }
            return n.floatValue
        }
    }

    /// An integer or a list of integers (e.g. `eos_token_id`).
    func ints(_ key: String) throws -> [Int]? {
        guard let value = values[key], !(value is NSNull) else { return nil }
        if let single = try? int(key) { return [single] }
        guard let array = value as? [Any] else { throw FormatError(file: file, tensor: key, "is \(value), not an integer or a list") }
        return try array.map {
            guard let n = $0 as? NSNumber, let i = Int(exactly: n.doubleValue) else { throw FormatError(file: file, tensor: key, "holds \($0), not an integer") }
            return i
        }
    }
}

extension ModelConfig {
    /// Parses a Hugging Face / MLX `config.json` of a `phi3` or `llama` model.
    public init(configJSON url: URL) throws {
        try self.init(json: JSONObject.read(url))
    }

    init(json: JSONObject) throws {
        let modelType = try json.string("model_type")
        guard let modelType, let architecture = Architecture(rawValue: modelType) else {
            throw FormatError(file: json.file, tensor: "model_type", "is \(modelType.map { "'\($0)'" } ?? "missing"); phi-gpu runs 'phi3' (Phi-3, Phi-3.5, Phi-4-mini) and 'llama' models")
        }
        let hidden = try json.requiredInt("hidden_size")
        let heads = try json.requiredInt("num_attention_heads")
        let kvHeads = try json.int("num_key_value_heads") ?? heads
        guard kvHeads >= 1, heads % kvHeads == 0 else {
            throw FormatError(file: json.file, tensor: "num_key_value_heads", "is \(kvHeads); it must divide num_attention_heads (\(heads))")
        }
        let headDimension = try json.int("head_dim") ?? hidden / heads
        guard headDimension >= 2, headDimension % 2 == 0, headDimension <= 1024 else {
            throw FormatError(file: json.file, tensor: "head_dim", "is \(headDimension); it must be even (hidden_size / num_attention_heads by default)")
        }
        // transformers ≥ 5 writes `rope_parameters` (with rope_theta inside) instead of rope_scaling.
        let ropeParameters = try json.object("rope_parameters")
        let ropeScaling = try json.object("rope_scaling") ?? ropeParameters
        let ropeTheta = try json.double("rope_theta") ?? ropeParameters?.double("rope_theta") ?? 10000
        let partial = try json.double("partial_rotary_factor") ?? ropeParameters?.double("partial_rotary_factor") ?? 1
        guard partial > 0, partial <= 1 else {
            throw FormatError(file: json.file, tensor: "partial_rotary_factor", "is \(partial); it must be in (0, 1]")
        }
        let rotary = Int((Double(headDimension) * partial).rounded())
        guard rotary >= 2, rotary % 2 == 0 else {
            throw FormatError(file: json.file, tensor: "partial_rotary_factor", "gives \(rotary) rotary dimensions of \(headDimension); it must be even")
        }
        let maxContext = try json.int("max_position_embeddings") ?? 4096
        var longRoPE: LongRoPE?
        if let scaling = ropeScaling {
            let type = try scaling.string("type") ?? scaling.string("rope_type") ?? "default"
            switch type {
            case "longrope", "su":
                guard let short = try scaling.floats("short_factor"), let long = try scaling.floats("long_factor") else {
                    throw FormatError(file: json.file, tensor: "rope_scaling", "of type \(type) needs short_factor and long_factor")
                }
                for (key, factors) in [("short_factor", short), ("long_factor", long)] where factors.count != rotary / 2 {
                    throw FormatError(file: json.file, tensor: "rope_scaling.\(key)", "has \(factors.count) factors; \(rotary / 2) expected (rotary dimensions / 2)")
                }
                let original = try json.int("original_max_position_embeddings")
                    ?? scaling.int("original_max_position_embeddings") ?? maxContext
                longRoPE = LongRoPE(shortFactor: short, longFactor: long, originalContext: original)
            case "default":
                break
            default:
                throw FormatError(file: json.file, tensor: "rope_scaling", "has type '\(type)', which phi-gpu does not implement (it does longrope/su)")
            }
        }
        self.init(architecture: architecture, hiddenSize: hidden,
                  intermediateSize: try json.requiredInt("intermediate_size"),
                  layerCount: try json.requiredInt("num_hidden_layers", range: 1...1024),
                  headCount: heads, kvHeadCount: kvHeads, headDimension: headDimension,
                  vocabularySize: try json.requiredInt("vocab_size"),
                  rmsNormEpsilon: Float(try json.double("rms_norm_eps") ?? 1e-5),
                  ropeTheta: Float(ropeTheta), rotaryDimensions: rotary, maxContext: maxContext,
                  longRoPE: longRoPE, tiedEmbeddings: try json.bool("tie_word_embeddings") ?? false)
    }
}

/// The `quantization` block of an MLX `config.json`: default bits and group size, and per-module
/// overrides (`"model.layers.0.mlp.down_proj": {"bits": 8, "group_size": 64}` or `false` for a
/// module left unquantized).
public struct MLXQuantization: Sendable, Equatable {
    public var bits: Int
    public var groupSize: Int
    /// Module path → (bits, groupSize), or nil when that module is not quantized.
    public var overrides: [String: Layout?]

    /// Bits and group size of one module.
    public struct Layout: Sendable, Equatable {
        public var bits: Int
        public var groupSize: Int
    }

    /// The block of `config.json`, or nil if the checkpoint is not quantized.
    init?(json: JSONObject) throws {
        guard let block = try json.object("quantization") ?? json.object("quantization_config") else { return nil }
        if let mode = try block.string("mode"), mode != "affine" {
            throw FormatError(file: json.file, tensor: "quantization.mode", "is '\(mode)'; phi-gpu reads MLX 'affine' quantization only")
        }
        bits = try block.requiredInt("bits", range: 2...8)
        groupSize = try block.requiredInt("group_size", range: 16...1024)
        overrides = [:]
        for (key, value) in block.values where !["bits", "group_size", "mode"].contains(key) {
            if let flag = value as? Bool, !flag {
                overrides[key] = .some(nil)
            } else if let object = value as? [String: Any] {
                let layer = JSONObject(file: json.file, values: object)
                overrides[key] = Layout(bits: try layer.requiredInt("bits", range: 2...8),
                                        groupSize: try layer.requiredInt("group_size", range: 16...1024))
            }
        }
    }

    /// (bits, groupSize) of the module at `path` (e.g. "model.layers.3.self_attn.qkv_proj"), nil if unquantized.
    public func layout(for path: String) -> (bits: Int, groupSize: Int)? {
        if let override = overrides[path] { return override.map { ($0.bits, $0.groupSize) } }
        return (bits, groupSize)
    }
}

/// End-of-sequence ids: `generation_config.json`'s `eos_token_id` if present, else config.json's.
func eosTokenIds(directory: URL, config: JSONObject) throws -> [Int] {
    let generation = directory.appendingPathComponent("generation_config.json")
    if FileManager.default.fileExists(atPath: generation.path), let ids = try JSONObject.read(generation).ints("eos_token_id") {
        return ids
    }
    return try config.ints("eos_token_id") ?? []
}
