extension Tokenizer {
    /// The text of `ids`, as the reference decoder gives it: SentencePiece `▁` become spaces, runs
    /// of `<0xNN>` tokens become their bytes (one U+FFFD per byte when the run is not valid
    /// UTF-8) and one leading space is dropped; byte-level tokens are joined and invalid UTF-8
    /// becomes U+FFFD. Ids with no token are skipped.
    public func decode(_ ids: [Int], skipSpecialTokens: Bool = false) -> String {
        var output: [UInt8] = []
        var byteRun: [UInt8] = []
        for id in ids where id >= 0 && id < vocabularySize && !tokenStrings[id].isEmpty {
            if skipSpecialTokens && specialIds.contains(id) { continue }
            if kind == .sentencePiece && byteValues[id] >= 0 {
                byteRun.append(UInt8(byteValues[id]))
                continue
            }
            Tokenizer.appendByteRun(&byteRun, to: &output)
            output.append(contentsOf: tokenBytes[id])
        }
        Tokenizer.appendByteRun(&byteRun, to: &output)
        if kind == .sentencePiece && output.first == 0x20 { output.removeFirst() }
        return String(decoding: output, as: UTF8.self)
    }

    /// Moves a run of byte-fallback bytes to `output`: as is when valid UTF-8, else U+FFFD per byte.
    static func appendByteRun(_ run: inout [UInt8], to output: inout [UInt8]) {
        if run.isEmpty { return }
        if isValidUTF8(run) {
            output.append(contentsOf: run)
        } else {
            for _ in run { output.append(contentsOf: [0xEF, 0xBF, 0xBD]) }
        }
        run.removeAll(keepingCapacity: true)
    }
}

/// Whether `bytes` are well-formed UTF-8.
func isValidUTF8(_ bytes: [UInt8]) -> Bool {
    var iterator = bytes.makeIterator()
    var decoder = UTF8()
    while true {
        switch decoder.decode(&iterator) {
        case .scalarValue: continue
        case .emptyInput: return true
        case .error: return false
        }
    }
}

/// Turns token ids into text one id at a time, for printing as they are generated: it emits only
/// complete UTF-8 characters, and the concatenation of everything it returns equals
/// `tokenizer.decode(ids)` of all the ids fed (including the SentencePiece leading-space rule).
public struct StreamingDetokenizer: Sendable {
    private let tokenizer: Tokenizer
    private let skipSpecialTokens: Bool
    private var pending: [UInt8] = []      // (bytes) byte-level: an unfinished character
    private var byteRun: [UInt8] = []      // (bytes) SentencePiece: the current run of <0xNN> tokens
    private var atStart = true             // SentencePiece: nothing decoded yet (a leading space is dropped)

    public init(tokenizer: Tokenizer, skipSpecialTokens: Bool = false) {
        self.tokenizer = tokenizer
        self.skipSpecialTokens = skipSpecialTokens
    }

    /// Feeds one id; returns the text that became complete (often empty while a character is unfinished).
    public mutating func append(_ id: Int) -> String {
        guard id >= 0 && id < tokenizer.vocabularySize && !tokenizer.tokenStrings[id].isEmpty else { return "" }
        if skipSpecialTokens && tokenizer.specialIds.contains(id) { return "" }
        switch tokenizer.kind {
        case .sentencePiece:
            if tokenizer.byteValues[id] >= 0 {
                byteRun.append(UInt8(tokenizer.byteValues[id]))
                return ""  // a later byte could still make the whole run invalid
            }
            var text: [UInt8] = []
            Tokenizer.appendByteRun(&byteRun, to: &text)
            text.append(contentsOf: tokenizer.tokenBytes[id])
            return sentencePieceText(text)
        case .byteLevel:
            pending.append(contentsOf: tokenizer.tokenBytes[id])
            let keep = StreamingDetokenizer.unfinishedSuffixLength(pending)
            let complete = String(decoding: pending[..<(pending.count - keep)], as: UTF8.self)
            pending.removeFirst(pending.count - keep)
            return complete
        }
    }

    /// Returns what is still held back (an unfinished character becomes U+FFFD) and resets the stream.
    public mutating func finish() -> String {
        defer {
            pending.removeAll()
            byteRun.removeAll()
            atStart = true
        }
        switch tokenizer.kind {
        case .sentencePiece:
            var text: [UInt8] = []
            Tokenizer.appendByteRun(&byteRun, to: &text)
            return sentencePieceText(text)
        case .byteLevel:
            return String(decoding: pending, as: UTF8.self)
        }
    }

    private mutating func sentencePieceText(_ bytes: [UInt8]) -> String {
        var bytes = bytes[...]
        if atStart && !bytes.isEmpty {
            if bytes.first == 0x20 { bytes = bytes.dropFirst() }
            atStart = false
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Length of the end of `bytes` that starts a UTF-8 character which more bytes could still
    /// complete (0 if the bytes end on a complete character or on an invalid sequence).
    static func unfinishedSuffixLength(_ bytes: [UInt8]) -> Int {
        let count = bytes.count
        for length in 1...3 where length <= count {
            let lead = bytes[count - length]
            if lead & 0xC0 == 0x80 { continue }  // a continuation byte: look further back
            let needed = lead >= 0xF5 ? 0 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0
            guard needed > length else { return 0 }
            if length >= 2 {  // the second byte's allowed range depends on the lead
                let second = bytes[count - length + 1]
                let low: UInt8 = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80
                let high: UInt8 = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF
                guard second >= low && second <= high else { return 0 }
            }
            return length
        }
        return 0
    }
}
