import Foundation
import PhiFormats

extension ModelConfig {
    /// Reads the `phi3.*` or `llama.*` metadata of a GGUF file (and, for longrope, its
    /// `rope_factors_short.weight` / `rope_factors_long.weight` tensors).
    public init(gguf file: GGUFFile) throws {
        guard let name = file.architecture, let architecture = Architecture(rawValue: name) else {
            throw FormatError(file: file.url, tensor: "general.architecture",
                              "is \(file.architecture.map { "'\($0)'" } ?? "missing"); phi-gpu runs 'phi3' and 'llama' GGUF models")
        }
        func int(_ key: String, range: ClosedRange<Int> = 1...(1 << 24)) throws -> Int? {
            guard let value = file.metadata["\(name).\(key)"] else { return nil }
            guard let int = value.intValue, range.contains(int) else {
                throw FormatError(file: file.url, tensor: "\(name).\(key)", "is \(value), not an integer in \(range)")
            }
            return int
        }
        func required(_ key: String, range: ClosedRange<Int> = 1...(1 << 24)) throws -> Int {
            guard let value = try int(key, range: range) else {
                throw FormatError(file: file.url, tensor: "\(name).\(key)", "is missing from the GGUF metadata")
            }
            return value
        }
        func float(_ key: String) throws -> Float? {
            guard let value = file.metadata["\(name).\(key)"] else { return nil }
            guard let float = value.floatValue, float.isFinite else {
                throw FormatError(file: file.url, tensor: "\(name).\(key)", "is \(value), not a number")
            }
            return float
        }
        let hidden = try required("embedding_length")
        let heads = try required("attention.head_count")
        let kvHeads = try int("attention.head_count_kv") ?? heads
        guard heads % kvHeads == 0 else {
            throw FormatError(file: file.url, tensor: "\(name).attention.head_count_kv", "is \(kvHeads); it must divide the head count \(heads)")
        }
        let headDimension = try int("attention.key_length") ?? hidden / heads
        let rotary = try int("rope.dimension_count") ?? headDimension
        guard headDimension >= 2, headDimension % 2 == 0, rotary >= 2, rotary % 2 == 0, rotary <= headDimension else {
            throw FormatError(file: file.url, tensor: "\(name).rope.dimension_count", "is \(rotary) for heads of \(headDimension); it must be even and at most the head size")
        }
        let maxContext = try int("context_length") ?? 4096
        let vocabulary = try int("vocab_size") ?? file.metadata["tokenizer.ggml.tokens"]?.arrayValue?.count
            ?? file.tensor(named: "token_embd.weight")?.shape.last
        guard let vocabulary, vocabulary > 0 else {
            throw FormatError(file: file.url, tensor: "\(name).vocab_size", "is missing and there is no tokenizer.ggml.tokens list or token_embd.weight")
        }
        var longRoPE: LongRoPE?
        if file.tensor(named: "rope_factors_long.weight") != nil || file.tensor(named: "rope_factors_short.weight") != nil {
            let long = try file.vector(named: "rope_factors_long.weight", count: rotary / 2).withFloats { Array($0) }
            let short = try file.vector(named: "rope_factors_short.weight", count: rotary / 2).withFloats { Array($0) }
            longRoPE = LongRoPE(shortFactor: short, longFactor: long,
                                originalContext: try int("rope.scaling.original_context_length") ?? maxContext)
        }
        if file.tensor(named: "rope_freqs.weight") != nil {
            throw FormatError(file: file.url, tensor: "rope_freqs.weight", "holds llama3-style RoPE frequency factors, which phi-gpu does not implement")
        }
        self.init(architecture: architecture, hiddenSize: hidden,
                  intermediateSize: try required("feed_forward_length"),
                  layerCount: try required("block_count", range: 1...1024),
                  headCount: heads, kvHeadCount: kvHeads, headDimension: headDimension,
                  vocabularySize: vocabulary,
                  rmsNormEpsilon: try float("attention.layer_norm_rms_epsilon") ?? 1e-5,
                  ropeTheta: try float("rope.freq_base") ?? 10000, rotaryDimensions: rotary,
                  maxContext: maxContext, longRoPE: longRoPE,
                  tiedEmbeddings: file.tensor(named: "output.weight") == nil)
    }
}
