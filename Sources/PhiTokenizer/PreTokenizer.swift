/// How text between added tokens is cut into words before byte-pair merging. Each pattern is a
/// hand-written matcher equal to the regular expression it names (Oniguruma semantics: leftmost
/// alternative first, greedy quantifiers with backtracking).
enum PreTokenizer: Sendable, Equatable {
    /// No cut (SentencePiece-style models): the whole segment is one word.
    case none
    /// OpenAI's o200k pattern (Phi-4-mini):
    /// `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
    /// `|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
    /// `|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
    case o200k
    /// GPT-2's byte-level pattern `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`,
    /// optionally after isolating every \p{N} scalar (SmolLM2: `Digits(individual_digits)`).
    case gpt2(isolateDigits: Bool)

    /// The regular expression of tokenizer.json's `Split` pre-tokenizer that `.o200k` implements.
    static let o200kPattern = #"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"#

    /// Calls `word` with the UTF-8 byte range of every word of `text`, in order.
    func split(_ text: ScalarText, word: (Range<Int>) -> Void) {
        let count = text.count
        if count == 0 { return }
        switch self {
        case .none:
            word(0..<Int(text.offsets[count]))
        case .o200k:
            var start = 0
            while start < count {
                let end = O200kMatcher(text: text, end: count).matchEnd(at: start)
                word(Int(text.offsets[start])..<Int(text.offsets[end]))
                start = end
            }
        case .gpt2(let isolateDigits):
            var start = 0
            while start < count {
                var segmentEnd = count
                if isolateDigits {
                    if text.classes[start] & ScalarClass.number != 0 {
                        word(Int(text.offsets[start])..<Int(text.offsets[start + 1]))
                        start += 1
                        continue
                    }
                    segmentEnd = start
                    while segmentEnd < count && text.classes[segmentEnd] & ScalarClass.number == 0 { segmentEnd += 1 }
                }
                let matcher = GPT2Matcher(text: text, end: segmentEnd)
                while start < segmentEnd {
                    let end = matcher.matchEnd(at: start)
                    word(Int(text.offsets[start])..<Int(text.offsets[end]))
                    start = end
                }
            }
        }
    }
}

/// Helpers shared by the two matchers; `end` is where the text (or the segment) ends.
private protocol PatternMatcher {
    var text: ScalarText { get }
    var end: Int { get }
}

extension PatternMatcher {
    @inline(__always) func has(_ index: Int, _ bits: UInt8) -> Bool {
        index < end && text.classes[index] & bits != 0
    }

    /// `[^\s\p{L}\p{N}]`
    @inline(__always) func isOther(_ index: Int) -> Bool {
        index < end && text.classes[index] & (ScalarClass.whitespace | ScalarClass.letter | ScalarClass.number) == 0
    }

    @inline(__always) func scalar(_ index: Int) -> UInt32 { index < end ? text.scalars[index] : 0 }

    /// End of the run of scalars having `bits`, from `index`.
    @inline(__always) func runEnd(from index: Int, _ bits: UInt8) -> Int {
        var position = index
        while has(position, bits) { position += 1 }
        return position
    }

    /// `\s+(?!\S)|\s+` at a whitespace scalar.
    func whitespaceEnd(at start: Int) -> Int {
        let runEnd = runEnd(from: start, ScalarClass.whitespace)
        if runEnd == end || runEnd - start < 2 { return runEnd }
        return runEnd - 1
    }

    /// The end of a contraction `'s|'t|'re|'ve|'m|'ll|'d` at `index`, or nil.
    func contractionEnd(at index: Int, ignoringCase: Bool) -> Int? {
        guard scalar(index) == 0x27 else { return nil }
        func letter(_ offset: Int, _ lower: Character) -> Bool {
            let value = scalar(index + offset)
            let lowerValue = lower.unicodeScalars.first!.value
            if value == lowerValue { return true }
            guard ignoringCase else { return false }
            return value == lowerValue - 0x20 || (lower == "s" && value == 0x17F)  // ſ folds to s
        }
        if letter(1, "s") || letter(1, "t") { return index + 2 }
        if (letter(1, "r") || letter(1, "v")) && letter(2, "e") { return index + 3 }
        if letter(1, "m") { return index + 2 }
        if letter(1, "l") && letter(2, "l") { return index + 3 }
        if letter(1, "d") { return index + 2 }
        return nil
    }
}

private struct O200kMatcher: PatternMatcher {
    let text: ScalarText
    let end: Int

    /// `[A]*[B]+` with A = Lu|Lt|Lm|Lo|M, B = Ll|Lm|Lo|M: the greedy A-run gives back scalars
    /// until one of B can start the B-run.
    func upperThenLower(at start: Int) -> Int? {
        let upperEnd = runEnd(from: start, ScalarClass.upperish)
        if has(upperEnd, ScalarClass.lowerish) { return runEnd(from: upperEnd, ScalarClass.lowerish) }
        var index = upperEnd - 1
        while index >= start {
            if has(index, ScalarClass.lowerish) { return index + 1 }
            index -= 1
        }
        return nil
    }

    /// `[A]+[B]*`
    func upperRunThenLower(at start: Int) -> Int? {
        guard has(start, ScalarClass.upperish) else { return nil }
        return runEnd(from: runEnd(from: start, ScalarClass.upperish), ScalarClass.lowerish)
    }

    func matchEnd(at start: Int) -> Int {
        // [^\r\n\p{L}\p{N}]? before the letters of the first two alternatives
        let hasPrefix = text.classes[start] & (ScalarClass.lineBreak | ScalarClass.letter | ScalarClass.number) == 0
        if hasPrefix, let e = upperThenLower(at: start + 1) { return contractionEnd(at: e, ignoringCase: true) ?? e }
        if let e = upperThenLower(at: start) { return contractionEnd(at: e, ignoringCase: true) ?? e }
        if hasPrefix, let e = upperRunThenLower(at: start + 1) { return contractionEnd(at: e, ignoringCase: true) ?? e }
        if let e = upperRunThenLower(at: start) { return contractionEnd(at: e, ignoringCase: true) ?? e }
        if has(start, ScalarClass.number) {  // \p{N}{1,3}
            var e = start + 1
            while e < start + 3 && has(e, ScalarClass.number) { e += 1 }
            return e
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`
        let otherStart = scalar(start) == 0x20 && isOther(start + 1) ? start + 1 : start
        if isOther(otherStart) {
            var e = otherStart
            while isOther(e) { e += 1 }
            while has(e, ScalarClass.lineBreak) || scalar(e) == 0x2F { e += 1 }
            return e
        }
        // `\s*[\r\n]+`: the greedy \s* gives back scalars until the last line break of the run.
        let whitespaceEnd = runEnd(from: start, ScalarClass.whitespace)
        var index = whitespaceEnd - 1
        while index >= start {
            if text.classes[index] & ScalarClass.lineBreak != 0 { return index + 1 }
            index -= 1
        }
        if whitespaceEnd > start { return self.whitespaceEnd(at: start) }
        return start + 1  // unreachable: every scalar matches one alternative
    }
}

private struct GPT2Matcher: PatternMatcher {
    let text: ScalarText
    let end: Int

    func matchEnd(at start: Int) -> Int {
        if let e = contractionEnd(at: start, ignoringCase: false) { return e }
        let afterSpace = scalar(start) == 0x20 ? start + 1 : start
        // ` ?\p{L}+`, ` ?\p{N}+` (after a space `start` itself is neither)
        if has(afterSpace, ScalarClass.letter) { return runEnd(from: afterSpace, ScalarClass.letter) }
        if has(afterSpace, ScalarClass.number) { return runEnd(from: afterSpace, ScalarClass.number) }
        if isOther(afterSpace) || isOther(start) {  // ` ?[^\s\p{L}\p{N}]+`
            var e = isOther(afterSpace) ? afterSpace : start
            while isOther(e) { e += 1 }
            return e
        }
        if has(start, ScalarClass.whitespace) { return whitespaceEnd(at: start) }
        return start + 1  // unreachable: every scalar matches one alternative
    }
}
