extension Tokenizer {
    /// Token ids of `text`.
    /// - Parameters:
    ///   - addSpecialTokens: put `bosId` first (and the end-of-sequence token last) when the
    ///     tokenizer's configuration says so (`addsBOS`, `addsEOS`).
    ///   - parseSpecial: recognise special tokens such as `<|user|>` written in `text`; otherwise
    ///     they are tokenized as plain text (user-defined added tokens are always recognised).
    public func encode(_ text: String, addSpecialTokens: Bool = true, parseSpecial: Bool = false) -> [Int] {
        var ids: [Int32] = []
        if addSpecialTokens && addsBOS, let bosId { ids.append(Int32(bosId)) }
        var text = text
        text.withUTF8 { bytes in
            var cache = WordCache()
            for segment in addedTokenMatcher.segments(of: bytes, parseSpecial: parseSpecial) {
                switch segment {
                case .token(let id): ids.append(Int32(id))
                case .text(let range):
                    let segmentBytes = UnsafeBufferPointer(rebasing: bytes[range])
                    switch kind {
                    case .sentencePiece: encodeSentencePiece(segmentBytes, into: &ids, cache: &cache)
                    case .byteLevel: encodeByteLevel(segmentBytes, into: &ids, cache: &cache)
                    }
                }
            }
        }
        if addSpecialTokens && addsEOS, let eos = eosIds.first { ids.append(Int32(eos)) }
        return ids.map(Int.init)
    }

    private func encodeSentencePiece(_ bytes: UnsafeBufferPointer<UInt8>, into ids: inout [Int32],
                                     cache: inout WordCache) {
        if bytes.isEmpty { return }
        let normalized = SentencePieceText.normalize(bytes, prependingSpace: prependsSpace)
        normalized.withUnsafeBufferPointer { text in
            guard splitsAtSpaces else {
                encodeWord(text, into: &ids, cache: &cache)
                return
            }
            // No token has `▁` after another character, so no merge crosses the start of a `▁` run
            // that follows another character: those runs start independent words.
            var start = 0
            var index = 0
            let count = text.count
            while index < count {
                if text[index] == 0xE2 && index + 2 < count && text[index + 1] == 0x96 && text[index + 2] == 0x81
                    && index > start
                    && !(index >= 3 && text[index - 3] == 0xE2 && text[index - 2] == 0x96 && text[index - 1] == 0x81) {
                    encodeWord(UnsafeBufferPointer(rebasing: text[start..<index]), into: &ids, cache: &cache)
                    start = index
                }
                index += 1
            }
            encodeWord(UnsafeBufferPointer(rebasing: text[start..<count]), into: &ids, cache: &cache)
        }
    }

    private func encodeByteLevel(_ bytes: UnsafeBufferPointer<UInt8>, into ids: inout [Int32],
                                 cache: inout WordCache) {
        let scalars = ScalarText(utf8: bytes)
        preTokenizer.split(scalars) { range in
            encodeWord(UnsafeBufferPointer(rebasing: bytes[range]), into: &ids, cache: &cache)
        }
    }

    /// Appends the tokens of one word (a byte-level word or a normalized SentencePiece word).
    private func encodeWord(_ word: UnsafeBufferPointer<UInt8>, into ids: inout [Int32], cache: inout WordCache) {
        if word.isEmpty { return }
        if ignoresMerges, let id = vocabulary.value(for: word) {
            ids.append(id)
            return
        }
        if cache.append(word, to: &ids) { return }
        var symbols = initialSymbols(of: word)
        BytePairMerger.merge(&symbols, merges: merges)
        cache.store(word, symbols)
        ids.append(contentsOf: symbols)
    }

    /// One symbol per byte (byte-level) or per character, falling back to `<0xNN>` tokens or the
    /// unknown token (SentencePiece).
    private func initialSymbols(of word: UnsafeBufferPointer<UInt8>) -> [Int32] {
        var symbols: [Int32] = []
        symbols.reserveCapacity(word.count)
        if kind == .byteLevel {
            // A byte without a token is dropped, as the reference BPE does without an unknown token.
            for byte in word where byteTokenIds[Int(byte)] >= 0 { symbols.append(byteTokenIds[Int(byte)]) }
            return symbols
        }
        var index = 0
        var previousWasUnknown = false
        while index < word.count {
            let lead = word[index]
            let length = min(lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2, word.count - index)
            let character = UnsafeBufferPointer(rebasing: word[index..<(index + length)])
            if let id = vocabulary.value(for: character) {
                symbols.append(id)
                previousWasUnknown = false
            } else if character.allSatisfy({ byteTokenIds[Int($0)] >= 0 }) {
                for byte in character { symbols.append(byteTokenIds[Int(byte)]) }
                previousWasUnknown = false
            } else if let unknownId, !previousWasUnknown {
                symbols.append(unknownId)
                previousWasUnknown = true  // consecutive unknown characters fuse into one
            }
            index += length
        }
        return symbols
    }
}

/// Tokens of the words already seen during one `encode` call.
struct WordCache {
    private var table = ByteTable(capacity: 1024)
    private var ranges: [Range<Int>] = []    // (words) where each word's tokens lie in `tokens`
    private var tokens: [Int32] = []         // (all cached tokens)
    static let longestWord = 256             // longer words are not cached
    static let maximumWords = 1 << 18

    /// Appends the cached tokens of `word`; false if it is not cached.
    func append(_ word: UnsafeBufferPointer<UInt8>, to ids: inout [Int32]) -> Bool {
        guard word.count <= WordCache.longestWord, table.count > 0, let index = table.value(for: word) else {
            return false
        }
        ids.append(contentsOf: tokens[ranges[Int(index)]])
        return true
    }

    mutating func store(_ word: UnsafeBufferPointer<UInt8>, _ symbols: [Int32]) {
        guard word.count <= WordCache.longestWord, ranges.count < WordCache.maximumWords else { return }
        table.insert(word, value: Int32(ranges.count))
        ranges.append(tokens.count..<(tokens.count + symbols.count))
        tokens.append(contentsOf: symbols)
    }
}
