import Foundation

/// Everything a loader reads from a tokenizer file, before the tables are built.
struct TokenizerDefinition {
    /// One merge: the two tokens joined, the token they make and the merge's priority (lower first).
    struct Merge { var left: Int32, right: Int32, merged: Int32, rank: Int32 }

    var source: String                 // the file, for messages
    var kind: Tokenizer.Kind
    var preTokenizer: PreTokenizer = .none
    var prependsSpace = false
    var modelTokens: [String?] = []    // (model vocabulary) token strings by id, nil for a gap
    var merges: [Merge] = []
    var ignoresMerges = false
    var unknownId: Int? = nil
    var addedTokens: [AddedToken] = []
    var bosId: Int? = nil
    var eosIds: [Int] = []
    var addsBOS = false
    var addsEOS = false
    var bosToken: String? = nil
    var eosToken: String? = nil
    var chatTemplate: String? = nil
}

/// The text conventions of SentencePiece-style vocabularies.
enum SentencePieceText {
    static let spaceMarker: [UInt8] = Array("▁".utf8)   // U+2581

    /// NN of a `<0xNN>` byte-fallback token.
    static func byteValue(ofToken token: String) -> UInt8? {
        let utf8 = Array(token.utf8)
        guard utf8.count == 6, token.hasPrefix("<0x"), token.hasSuffix(">") else { return nil }
        return UInt8(String(decoding: utf8[3..<5], as: UTF8.self), radix: 16)
    }

    /// The token's text with `▁` turned back into spaces.
    static func decodedBytes(ofToken token: String) -> [UInt8] {
        var result: [UInt8] = []
        let utf8 = Array(token.utf8)
        var index = 0
        while index < utf8.count {
            if index + 2 < utf8.count && utf8[index] == 0xE2 && utf8[index + 1] == 0x96 && utf8[index + 2] == 0x81 {
                result.append(0x20)
                index += 3
            } else {
                result.append(utf8[index])
                index += 1
            }
        }
        return result
    }

    /// Normalizes text as the Phi-3 tokenizer does: optionally `▁` first, then every space as `▁`.
    static func normalize(_ bytes: UnsafeBufferPointer<UInt8>, prependingSpace: Bool) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count + bytes.count / 2 + 3)
        if prependingSpace { result.append(contentsOf: spaceMarker) }
        for byte in bytes {
            if byte == 0x20 { result.append(contentsOf: spaceMarker) } else { result.append(byte) }
        }
        return result
    }
}

/// GPT-2's reversible mapping of bytes to printable characters, used by byte-level vocabularies:
/// printable Latin-1 bytes map to themselves, the others to U+0100 onwards.
enum ByteLevelText {
    /// (256) the character each byte is written as.
    static let characterOfByte: [Unicode.Scalar] = {
        var result = [Unicode.Scalar](repeating: " ", count: 256)
        var next: UInt32 = 256
        for byte in 0..<256 {
            let printable = (0x21...0x7E).contains(byte) || (0xA1...0xAC).contains(byte) || (0xAE...0xFF).contains(byte)
            if printable {
                result[byte] = Unicode.Scalar(UInt8(byte))
            } else {
                result[byte] = Unicode.Scalar(next)!
                next += 1
            }
        }
        return result
    }()

    /// The inverse of `characterOfByte`, indexed by code point (0..<324), -1 where none.
    static let byteOfCharacter: [Int16] = {
        var result = [Int16](repeating: -1, count: 324)
        for (byte, character) in characterOfByte.enumerated() { result[Int(character.value)] = Int16(byte) }
        return result
    }()

    /// The raw bytes a byte-level token stands for, or nil if it holds a character outside the mapping.
    static func bytes(ofToken token: String) -> [UInt8]? {
        var result: [UInt8] = []
        result.reserveCapacity(token.unicodeScalars.count)
        for scalar in token.unicodeScalars {
            let value = Int(scalar.value)
            guard value < byteOfCharacter.count, byteOfCharacter[value] >= 0 else { return nil }
            result.append(UInt8(byteOfCharacter[value]))
        }
        return result
    }

    /// Writes raw bytes as a byte-level token string.
    static func token(ofBytes bytes: [UInt8]) -> String {
        var result = String.UnicodeScalarView()
        for byte in bytes { result.append(characterOfByte[Int(byte)]) }
        return String(result)
    }
}
