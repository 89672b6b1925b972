/// A text tokenizer equal to the model's reference tokenizer: SentencePiece-style BPE with byte
/// fallback (Phi-3 / Phi-3.5) or byte-level BPE behind a pre-tokenizer pattern (Phi-4-mini's o200k,
/// GPT-2 style for SmolLM2). Immutable and safe to share between threads.
///
/// Load it with `Tokenizer.load(directory:)` (tokenizer.json and tokenizer_config.json) or
/// `Tokenizer(gguf:)` (the `tokenizer.ggml.*` metadata of a GGUF file).
public final class Tokenizer: Sendable {
    /// The two families of byte-pair tokenizers.
    public enum Kind: String, Sendable {
        /// SentencePiece-style: spaces become `▁`, a `▁` is prepended, unknown characters fall back to `<0xNN>` tokens.
        case sentencePiece
        /// Byte-level: the UTF-8 bytes of each pre-tokenized word are merged, starting from one token per byte.
        case byteLevel
    }

    public let kind: Kind
    /// Number of token ids (model vocabulary and added tokens; ids without a token decode to nothing).
    public let vocabularySize: Int
    /// The beginning-of-sequence token, if the tokenizer has one.
    public let bosId: Int?
    /// Tokens that end generation: the tokenizer's end-of-sequence token and those the model
    /// configuration adds (generation_config.json, GGUF end-of-turn), first the tokenizer's.
    public let eosIds: [Int]
    /// Whether `encode(addSpecialTokens: true)` puts `bosId` first / `eosIds[0]` last.
    public let addsBOS: Bool
    public let addsEOS: Bool
    /// The added tokens (special and user-defined), matched whole in the text.
    public let addedTokens: [AddedToken]
    /// The chat template text found beside the tokenizer, if any (see `ChatTemplate`).
    public let chatTemplateText: String?
    /// The strings the chat template uses for `bos_token` and `eos_token`.
    public let bosToken: String?
    public let eosToken: String?

    let preTokenizer: PreTokenizer
    let prependsSpace: Bool                 // SentencePiece: prepend `▁` to every text segment
    let splitsAtSpaces: Bool                // SentencePiece: no token has `▁` after another character
    let vocabulary: ByteTable               // (model tokens) key bytes → id; byte-level keys are raw bytes
    let merges: MergeTable                  // (merges) (left, right) → (rank, merged)
    let ignoresMerges: Bool                 // a word that is a token is taken whole
    let byteTokenIds: [Int32]               // (256) the token of each byte (<0xNN> or the byte's symbol), -1 if none
    let unknownId: Int32?
    let tokenStrings: [String]              // (vocabularySize) each token as written in the file, "" for none
    let tokenBytes: [[UInt8]]               // (vocabularySize) the UTF-8 bytes each token decodes to
    let byteValues: [Int16]                 // (vocabularySize) SentencePiece `<0xNN>` tokens: NN, else -1
    let specialIds: Set<Int>
    let addedTokenMatcher: AddedTokenMatcher
    let tokenIdsByString: ByteTable         // (vocabularySize) token UTF-8 → id

    init(_ definition: TokenizerDefinition) throws {
        kind = definition.kind
        preTokenizer = definition.preTokenizer
        prependsSpace = definition.prependsSpace
        ignoresMerges = definition.ignoresMerges
        unknownId = definition.unknownId.map(Int32.init)
        addedTokens = definition.addedTokens
        bosToken = definition.bosToken
        eosToken = definition.eosToken
        chatTemplateText = definition.chatTemplate
        addsBOS = definition.addsBOS
        addsEOS = definition.addsEOS

        var strings = definition.modelTokens
        for token in definition.addedTokens {
            if token.id >= strings.count { strings += [String?](repeating: nil, count: token.id + 1 - strings.count) }
            strings[token.id] = token.content
        }
        vocabularySize = strings.count
        tokenStrings = strings.map { $0 ?? "" }
        var byId = ByteTable(capacity: strings.count)
        for (id, string) in strings.enumerated() { if let string { byId.insert(Array(string.utf8), value: Int32(id)) } }
        tokenIdsByString = byId

        var table = ByteTable(capacity: definition.modelTokens.count)
        var bytesOfTokens = [[UInt8]](repeating: [], count: strings.count)
        var values = [Int16](repeating: -1, count: kind == .sentencePiece ? strings.count : 0)
        var byteIds = [Int32](repeating: -1, count: 256)
        for (id, string) in definition.modelTokens.enumerated() {
            guard let string else { continue }
            switch kind {
            case .sentencePiece:
                table.insert(Array(string.utf8), value: Int32(id))
                if let byte = SentencePieceText.byteValue(ofToken: string) {
                    values[id] = Int16(byte)
                    byteIds[Int(byte)] = Int32(id)
                }
            case .byteLevel:
                if let raw = ByteLevelText.bytes(ofToken: string) {
                    table.insert(raw, value: Int32(id))
                    if raw.count == 1 && byteIds[Int(raw[0])] < 0 { byteIds[Int(raw[0])] = Int32(id) }
                }
            }
        }
        for (id, string) in strings.enumerated() {
            guard let string else { continue }
            switch kind {
            case .sentencePiece: bytesOfTokens[id] = SentencePieceText.decodedBytes(ofToken: string)
            case .byteLevel: bytesOfTokens[id] = ByteLevelText.bytes(ofToken: string) ?? Array(string.utf8)
            }
        }
        vocabulary = table
        tokenBytes = bytesOfTokens
        byteValues = values
        byteTokenIds = byteIds
        splitsAtSpaces = kind == .sentencePiece && definition.modelTokens.allSatisfy { token in
            guard let token else { return true }
            return !token.drop(while: { $0 == "▁" }).contains("▁")
        }

        var mergeTable = MergeTable(capacity: definition.merges.count)
        for merge in definition.merges {
            mergeTable.insert(left: merge.left, right: merge.right, rank: merge.rank, merged: merge.merged)
        }
        merges = mergeTable
        specialIds = Set(definition.addedTokens.filter(\.isSpecial).map(\.id))
        addedTokenMatcher = AddedTokenMatcher(tokens: definition.addedTokens)
        bosId = definition.bosId
        var eos: [Int] = []
        for id in definition.eosIds where !eos.contains(id) { eos.append(id) }
        eosIds = eos
    }

    /// The id of a token given as written in the vocabulary (e.g. `<|end|>`, `▁the`, `Ġthe`), or nil.
    public func tokenId(for token: String) -> Int? { tokenIdsByString.value(for: Array(token.utf8)).map(Int.init) }

    /// The token with id `id` as written in the vocabulary, or nil for an id with no token.
    public func token(for id: Int) -> String? {
        id >= 0 && id < vocabularySize && !tokenStrings[id].isEmpty ? tokenStrings[id] : nil
    }

    /// Whether `id` is a special (control) token.
    public func isSpecial(_ id: Int) -> Bool { specialIds.contains(id) }

    /// The UTF-8 bytes token `id` stands for (a `<0xNN>` token: that byte); empty for an unknown id.
    public func bytes(of id: Int) -> [UInt8] {
        guard id >= 0 && id < vocabularySize else { return [] }
        if kind == .sentencePiece, byteValues[id] >= 0 { return [UInt8(byteValues[id])] }
        return tokenBytes[id]
    }
}
