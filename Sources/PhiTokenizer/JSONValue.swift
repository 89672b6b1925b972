/// A parsed JSON value. Objects keep their members in order as a list, so that keys that are
/// different byte strings but equal Swift Strings (canonically equivalent Unicode, e.g. U+03AC
/// and U+1F71) stay distinct, as tokenizer vocabularies need.
enum JSONValue {
    case object([JSONMember])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    /// The first member named `key` (compared byte for byte) of an object.
    subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        let utf8 = Array(key.utf8)
        return members.first { $0.key.utf8.elementsEqual(utf8) }?.value
    }

    var string: String? { if case .string(let s) = self { return s } else { return nil } }
    var bool: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    var array: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
    var members: [JSONMember]? { if case .object(let m) = self { return m } else { return nil } }
    var isNull: Bool { if case .null = self { return true } else { return false } }
    var int: Int? {
        guard case .number(let n) = self, n == n.rounded(), abs(n) < 1e15 else { return nil }
        return Int(n)
    }
}

/// One member of a JSON object.
struct JSONMember {
    let key: String
    let value: JSONValue
}

/// A small strict JSON parser over UTF-8 bytes.
struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0

    struct Failure: Error, CustomStringConvertible {
        let offset: Int
        let reason: String
        var description: String { "\(reason) at byte \(offset)" }
    }

    static func parse(_ data: [UInt8]) throws -> JSONValue {
        try data.withUnsafeBufferPointer { buffer in
            var parser = JSONParser(bytes: buffer)
            let value = try parser.value()
            parser.skipWhitespace()
            guard parser.position == buffer.count else { throw Failure(offset: parser.position, reason: "trailing characters") }
            return value
        }
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    private mutating func skipWhitespace() {
        while position < bytes.count, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[position]) { position += 1 }
    }

    private func fail(_ reason: String) -> Failure { Failure(offset: position, reason: reason) }

    private mutating func expect(_ literal: String, _ value: JSONValue) throws -> JSONValue {
        for byte in literal.utf8 {
            guard position < bytes.count, bytes[position] == byte else { throw fail("expected \(literal)") }
            position += 1
        }
        return value
    }

    private mutating func value() throws -> JSONValue {
        skipWhitespace()
        guard position < bytes.count else { throw fail("unexpected end") }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            position += 1
            var members: [JSONMember] = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") { position += 1; return .object(members) }
            while true {
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw fail("expected a key") }
                let key = try string()
                skipWhitespace()
                guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                position += 1
                members.append(JSONMember(key: key, value: try value()))
                skipWhitespace()
                guard position < bytes.count else { throw fail("unterminated object") }
                if bytes[position] == UInt8(ascii: ",") { position += 1; continue }
                guard bytes[position] == UInt8(ascii: "}") else { throw fail("expected ',' or '}'") }
                position += 1
                return .object(members)
            }
        case UInt8(ascii: "["):
            position += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") { position += 1; return .array(elements) }
            while true {
                elements.append(try value())
                skipWhitespace()
                guard position < bytes.count else { throw fail("unterminated array") }
                if bytes[position] == UInt8(ascii: ",") { position += 1; continue }
                guard bytes[position] == UInt8(ascii: "]") else { throw fail("expected ',' or ']'") }
                position += 1
                return .array(elements)
            }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        default: return try number()
        }
    }

    private mutating func number() throws -> JSONValue {
        let start = position
        var isInteger = true
        var integer = 0
        var negative = false
        if bytes[position] == UInt8(ascii: "-") { negative = true; position += 1 }
        while position < bytes.count {
            let byte = bytes[position]
            if byte >= 0x30 && byte <= 0x39 {
                if integer < 1 << 50 { integer = integer * 10 + Int(byte - 0x30) } else { isInteger = false }
            } else if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")
                        || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") {
                isInteger = false
            } else { break }
            position += 1
        }
        guard position > start + (negative ? 1 : 0) else { throw fail("unexpected character") }
        if isInteger { return .number(Double(negative ? -integer : integer)) }
        guard let value = Double(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)) else {
            throw Failure(offset: start, reason: "invalid number")
        }
        return .number(value)
    }

    private mutating func string() throws -> String {
        position += 1  // the opening quote
        let start = position
        while position < bytes.count, bytes[position] != UInt8(ascii: "\""), bytes[position] != UInt8(ascii: "\\") {
            position += 1
        }
        guard position < bytes.count else { throw fail("unterminated string") }
        if bytes[position] == UInt8(ascii: "\"") {
            position += 1
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<(position - 1)]), as: UTF8.self)
        }
        var result = Array(bytes[start..<position])
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return String(decoding: result, as: UTF8.self)
            }
            if byte != UInt8(ascii: "\\") { result.append(byte); position += 1; continue }
            guard position + 1 < bytes.count else { break }
            let escape = bytes[position + 1]
            position += 2
            switch escape {
            case UInt8(ascii: "n"): result.append(0x0A)
            case UInt8(ascii: "t"): result.append(0x09)
            case UInt8(ascii: "r"): result.append(0x0D)
            case UInt8(ascii: "b"): result.append(0x08)
            case UInt8(ascii: "f"): result.append(0x0C)
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800..<0xDC00).contains(code), position + 1 < bytes.count,
                   bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") {
                    position += 2
                    let low = try hex4()
                    code = (0xDC00..<0xE000).contains(low) ? 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00) : 0xFFFD
                }
                result.append(contentsOf: Array(String(Unicode.Scalar(code) ?? "\u{FFFD}").utf8))
            default: result.append(escape)  // \" \\ \/
            }
        }
        throw fail("unterminated string")
    }

    private mutating func hex4() throws -> UInt32 {
        guard position + 4 <= bytes.count,
              let value = UInt32(String(decoding: UnsafeBufferPointer(rebasing: bytes[position..<(position + 4)]), as: UTF8.self), radix: 16)
        else { throw fail("invalid \\u escape") }
        position += 4
        return value
    }
}
