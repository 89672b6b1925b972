/// The Unicode classes the pre-tokenizer patterns ask about, as bits of one byte per scalar.
enum ScalarClass {
    static let letter: UInt8 = 1          // \p{L}
    static let number: UInt8 = 2          // \p{N}
    static let whitespace: UInt8 = 4      // \s (White_Space)
    static let lineBreak: UInt8 = 8       // \r or \n
    static let upperish: UInt8 = 16       // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
    static let lowerish: UInt8 = 32       // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
    static let mark: UInt8 = 64           // \p{M}

    static func classify(_ scalar: Unicode.Scalar) -> UInt8 {
        var bits: UInt8 = 0
        switch scalar.properties.generalCategory {
        case .uppercaseLetter, .titlecaseLetter: bits = letter | upperish
        case .lowercaseLetter: bits = letter | lowerish
        case .modifierLetter, .otherLetter: bits = letter | upperish | lowerish
        case .nonspacingMark, .spacingMark, .enclosingMark: bits = mark | upperish | lowerish
        case .decimalNumber, .letterNumber, .otherNumber: bits = number
        default: bits = 0
        }
        if scalar.properties.isWhitespace { bits |= whitespace }
        if scalar == "\r" || scalar == "\n" { bits |= lineBreak }
        return bits
    }

    /// Classes of the 128 ASCII scalars, looked up without touching the Unicode tables.
    static let ascii: [UInt8] = (0..<128).map { classify(Unicode.Scalar(UInt8($0))) }
}

/// A text segment decoded into scalars with their classes and UTF-8 offsets, which the
/// pre-tokenizers scan by scalar index.
struct ScalarText {
    var scalars: [UInt32] = []     // (scalars) code points
    var classes: [UInt8] = []      // (scalars) ScalarClass bits
    var offsets: [Int32] = []      // (scalars + 1) UTF-8 offset of each scalar, then the end

    /// Decodes valid UTF-8 (the bytes of a Swift String).
    init(utf8 bytes: UnsafeBufferPointer<UInt8>) {
        scalars.reserveCapacity(bytes.count)
        classes.reserveCapacity(bytes.count)
        offsets.reserveCapacity(bytes.count + 1)
        var index = 0
        let count = bytes.count
        while index < count {
            let lead = bytes[index]
            offsets.append(Int32(index))
            if lead < 0x80 {
                scalars.append(UInt32(lead))
                classes.append(ScalarClass.ascii[Int(lead)])
                index += 1
                continue
            }
            var value: UInt32
            var length: Int
            if lead >= 0xF0 { value = UInt32(lead & 0x07); length = 4 }
            else if lead >= 0xE0 { value = UInt32(lead & 0x0F); length = 3 }
            else { value = UInt32(lead & 0x1F); length = 2 }
            for offset in 1..<length where index + offset < count {
                value = value << 6 | UInt32(bytes[index + offset] & 0x3F)
            }
            index += length
            scalars.append(value)
            classes.append(Unicode.Scalar(value).map(ScalarClass.classify) ?? 0)
        }
        offsets.append(Int32(count))
    }

    var count: Int { scalars.count }
}
