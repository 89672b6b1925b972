import Foundation

/// A token matched as a whole in the text before any other tokenization (special tokens such as
/// `<|end|>` and user-defined ones), with Hugging Face's matching flags.
public struct AddedToken: Sendable, Equatable {
    public let id: Int
    public let content: String
    /// Special tokens are matched only when encoding with `parseSpecial: true`.
    public let isSpecial: Bool
    /// `lstrip`: the match also swallows the whitespace before it.
    public let stripsLeft: Bool
    /// `rstrip`: the match also swallows the whitespace after it (Phi-3.5's `<|end|>` and newline).
    public let stripsRight: Bool
    /// `single_word`: matches only when not inside a word.
    public let singleWord: Bool

    public init(id: Int, content: String, isSpecial: Bool, stripsLeft: Bool = false,
                stripsRight: Bool = false, singleWord: Bool = false) {
        self.id = id
        self.content = content
        self.isSpecial = isSpecial
        self.stripsLeft = stripsLeft
        self.stripsRight = stripsRight
        self.singleWord = singleWord
    }
}

/// A piece of the input: text to tokenize (a UTF-8 byte range) or an added token already found.
enum TextSegment: Equatable {
    case text(Range<Int>)
    case token(Int)
}

/// Finds added tokens in text: leftmost match first, the longest among those starting there.
struct AddedTokenMatcher: Sendable {
    private let tokens: [AddedToken]
    private let contents: [[UInt8]]              // (tokens) UTF-8 of each content
    private let candidatesByFirstByte: [[Int]]   // (256) token indices, longest content first

    init(tokens: [AddedToken]) {
        self.tokens = tokens
        let utf8 = tokens.map { Array($0.content.utf8) }
        var candidates = [[Int]](repeating: [], count: 256)
        for index in tokens.indices where !utf8[index].isEmpty {
            candidates[Int(utf8[index][0])].append(index)
        }
        for byte in 0..<256 { candidates[byte].sort { utf8[$0].count > utf8[$1].count } }
        contents = utf8
        candidatesByFirstByte = candidates
    }

    var isEmpty: Bool { tokens.isEmpty }

    /// Splits `bytes` into text ranges and added tokens; special tokens only when `parseSpecial`.
    func segments(of bytes: UnsafeBufferPointer<UInt8>, parseSpecial: Bool) -> [TextSegment] {
        var result: [TextSegment] = []
        var textStart = 0
        var position = 0
        let count = bytes.count
        while position < count {
            var found: (token: Int, end: Int)? = nil
            for index in candidatesByFirstByte[Int(bytes[position])] {
                let token = tokens[index]
                let content = contents[index]
                if token.isSpecial && !parseSpecial { continue }
                if position + content.count > count { continue }
                if memcmp(bytes.baseAddress! + position, content, content.count) != 0 { continue }
                if token.singleWord
                    && (endsWithWordCharacter(bytes, before: position)
                        || startsWithWordCharacter(bytes, at: position + content.count)) { continue }
                found = (index, position + content.count)
                break
            }
            guard let match = found else {
                position += 1
                continue
            }
            let token = tokens[match.token]
            var matchStart = position
            var matchEnd = match.end
            if token.stripsLeft {
                while matchStart > textStart, let previous = scalarStart(bytes, before: matchStart),
                      isWhitespace(bytes, at: previous) {
                    matchStart = previous
                }
            }
            if token.stripsRight {
                while matchEnd < count, isWhitespace(bytes, at: matchEnd) {
                    matchEnd += scalarLength(bytes[matchEnd])
                }
            }
            if matchStart > textStart { result.append(.text(textStart..<matchStart)) }
            result.append(.token(token.id))
            textStart = matchEnd
            position = matchEnd
        }
        if textStart < count { result.append(.text(textStart..<count)) }
        return result
    }

    private func scalarLength(_ lead: UInt8) -> Int {
        lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2
    }

    private func scalar(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Unicode.Scalar? {
        let length = min(scalarLength(bytes[index]), bytes.count - index)
        var iterator = UnsafeBufferPointer(rebasing: bytes[index..<(index + length)]).makeIterator()
        var decoder = UTF8()
        if case .scalarValue(let value) = decoder.decode(&iterator) { return value }
        return nil
    }

    private func scalarStart(_ bytes: UnsafeBufferPointer<UInt8>, before index: Int) -> Int? {
        var start = index - 1
        while start > 0 && bytes[start] & 0xC0 == 0x80 { start -= 1 }
        return start >= 0 ? start : nil
    }

    private func isWhitespace(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
        scalar(bytes, at: index)?.properties.isWhitespace ?? false
    }

    private func isWordCharacter(_ scalar: Unicode.Scalar?) -> Bool {
        guard let scalar else { return false }
        return ScalarClass.classify(scalar) & (ScalarClass.letter | ScalarClass.number) != 0
    }

    private func endsWithWordCharacter(_ bytes: UnsafeBufferPointer<UInt8>, before index: Int) -> Bool {
        guard index > 0, let start = scalarStart(bytes, before: index) else { return false }
        return isWordCharacter(scalar(bytes, at: start))
    }

    private func startsWithWordCharacter(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
        index < bytes.count && isWordCharacter(scalar(bytes, at: index))
    }
}
