import Foundation
import PhiFormats

extension Tokenizer {
    /// Builds the tokenizer stored in a GGUF file's `tokenizer.ggml.*` metadata: `llama`
    /// (SentencePiece-style, merges by score) or `gpt2` (byte-level BPE, merges listed).
    public convenience init(gguf: GGUFFile) throws {
        try self.init(ggufMetadata: gguf.metadata, source: gguf.url.path)
    }

    /// As `init(gguf:)`, from metadata already read; `source` names the file in messages.
    public convenience init(ggufMetadata metadata: [String: GGUFValue], source: String) throws {
        try self.init(GGUFTokenizerLoader.definition(metadata: metadata, source: source))
    }
}

/// Reads the llama.cpp vocabulary keys (`tokenizer.ggml.model`, `tokens`, `scores`, `token_type`,
/// `merges`, `pre`, the special token ids and flags, `tokenizer.chat_template`).
enum GGUFTokenizerLoader {
    /// llama.cpp's token types.
    enum TokenType: Int { case normal = 1, unknown = 2, control = 3, userDefined = 4, unused = 5, byte = 6 }

    /// End-of-turn tokens that llama.cpp recognises by their text when the file names none.
    static let endOfTurnTokens = ["<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>"]

    static func definition(metadata: [String: GGUFValue], source: String) throws -> TokenizerDefinition {
        func required<T>(_ key: String, _ read: (GGUFValue) -> T?) throws -> T {
            guard let value = metadata[key], let result = read(value) else {
                throw TokenizerError.missingField(source: source, field: key)
            }
            return result
        }
        let model = try required("tokenizer.ggml.model") { $0.stringValue }
        let tokens = try required("tokenizer.ggml.tokens") { $0.stringArray }
        let types = metadata["tokenizer.ggml.token_type"]?.intArray ?? []
        guard types.isEmpty || types.count == tokens.count else {
            throw TokenizerError.invalidData(
                source: source, reason: "tokenizer.ggml.token_type has \(types.count) entries for \(tokens.count) tokens")
        }
        func type(_ id: Int) -> TokenType { types.isEmpty ? .normal : TokenType(rawValue: types[id]) ?? .normal }

        var definition: TokenizerDefinition
        switch model {
        case "llama":
            definition = TokenizerDefinition(source: source, kind: .sentencePiece)
            definition.prependsSpace = metadata["tokenizer.ggml.add_space_prefix"]?.boolValue ?? true
            let scores = try required("tokenizer.ggml.scores") { $0.floatArray }
            guard scores.count == tokens.count else {
                throw TokenizerError.invalidData(
                    source: source, reason: "tokenizer.ggml.scores has \(scores.count) entries for \(tokens.count) tokens")
            }
            definition.merges = mergesFromScores(tokens: tokens, scores: scores, isMergeable: { type($0) == .normal })
        case "gpt2":
            definition = TokenizerDefinition(source: source, kind: .byteLevel)
            let pre = metadata["tokenizer.ggml.pre"]?.stringValue ?? "default"
            switch pre {
            case "gpt-4o": definition.preTokenizer = .o200k; definition.ignoresMerges = true
            case "smollm": definition.preTokenizer = .gpt2(isolateDigits: true)
            case "gpt2", "default": definition.preTokenizer = .gpt2(isolateDigits: false)
            default:
                throw TokenizerError.unsupported(source: source, what: "tokenizer.ggml.pre = \(pre) (known: gpt-4o, smollm, gpt2)")
            }
            let merges = try required("tokenizer.ggml.merges") { $0.stringArray }
            definition.merges = try listedMerges(merges, tokens: tokens, source: source)
        default:
            throw TokenizerError.unsupported(source: source, what: "tokenizer.ggml.model = \(model) (known: llama, gpt2)")
        }
        definition.modelTokens = tokens

        let name = (metadata["general.name"]?.stringValue ?? "").lowercased()
        let isPhi3 = name.contains("phi-3") || name.contains("phi3")
        for (id, content) in tokens.enumerated() where type(id) == .control || type(id) == .userDefined {
            // llama.cpp's Phi-3 rule: special tokens swallow the whitespace after them, except these three.
            let stripsRight = isPhi3 && !["<unk>", "<s>", "<|endoftext|>"].contains { $0.utf8.elementsEqual(content.utf8) }
            definition.addedTokens.append(AddedToken(
                id: id, content: content, isSpecial: type(id) == .control, stripsRight: stripsRight))
        }
        definition.unknownId = metadata["tokenizer.ggml.unknown_token_id"]?.intValue
        definition.bosId = metadata["tokenizer.ggml.bos_token_id"]?.intValue
        definition.addsBOS = metadata["tokenizer.ggml.add_bos_token"]?.boolValue ?? (model == "llama")
        definition.addsEOS = metadata["tokenizer.ggml.add_eos_token"]?.boolValue ?? false
        for key in ["tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"] {
            if let id = metadata[key]?.intValue { definition.eosIds.append(id) }
        }
        for text in endOfTurnTokens {
            if let id = tokens.firstIndex(where: { $0.utf8.elementsEqual(text.utf8) }), type(id) == .control {
                definition.eosIds.append(id)
            }
        }
        for id in [definition.bosId, definition.unknownId] + definition.eosIds.map(Optional.some) {
            if let id, !tokens.indices.contains(id) {
                throw TokenizerError.invalidData(source: source, reason: "special token id \(id) is outside the \(tokens.count) tokens")
            }
        }
        definition.bosToken = definition.bosId.map { tokens[$0] }
        definition.eosToken = definition.eosIds.first.map { tokens[$0] }
        definition.chatTemplate = metadata["tokenizer.chat_template"]?.stringValue
        return definition
    }

    /// Token UTF-8 → first id with that text.
    static func tokenTable(_ tokens: [String]) -> ByteTable {
        var table = ByteTable(capacity: tokens.count)
        for (id, token) in tokens.enumerated() { table.insert(Array(token.utf8), value: Int32(id)) }
        return table
    }

    /// Byte-pair merges listed as "left right", ranked in order.
    static func listedMerges(_ merges: [String], tokens: [String], source: String) throws -> [TokenizerDefinition.Merge] {
        let ids = tokenTable(tokens)
        return try merges.enumerated().map { rank, text in
            let utf8 = Array(text.utf8)
            guard let space = utf8.firstIndex(of: 0x20), let left = ids.value(for: Array(utf8[..<space])),
                  let right = ids.value(for: Array(utf8[(space + 1)...])),
                  let merged = ids.value(for: Array(utf8[..<space] + utf8[(space + 1)...])) else {
                throw TokenizerError.invalidData(source: source, reason: "tokenizer.ggml.merges[\(rank)] (\(text)) names unknown tokens")
            }
            return .init(left: left, right: right, merged: merged, rank: Int32(rank))
        }
    }

    /// SentencePiece merges: any two tokens whose concatenation is a mergeable token join, the
    /// higher the score of the result the earlier; equal scores share a rank (leftmost first),
    /// exactly as llama.cpp's SentencePiece tokenizer merges.
    static func mergesFromScores(tokens: [String], scores: [Float], isMergeable: (Int) -> Bool) -> [TokenizerDefinition.Merge] {
        let ids = tokenTable(tokens)
        let distinctScores = Array(Set(scores)).sorted(by: >)
        var rankOfScore: [Float: Int32] = [:]
        for (rank, score) in distinctScores.enumerated() { rankOfScore[score] = Int32(rank) }
        var merges: [TokenizerDefinition.Merge] = []
        for (id, token) in tokens.enumerated() where isMergeable(id) && token.unicodeScalars.count > 1 {
            let rank = rankOfScore[scores[id]] ?? Int32.max
            let scalars = token.unicodeScalars  // split between scalars, the initial symbols
            var split = scalars.index(after: scalars.startIndex)
            while split < scalars.endIndex {
                if let left = ids.value(for: Array(String(scalars[..<split]).utf8)),
                   let right = ids.value(for: Array(String(scalars[split...]).utf8)) {
                    merges.append(.init(left: left, right: right, merged: Int32(id), rank: rank))
                }
                split = scalars.index(after: split)
            }
        }
        return merges
    }
}
