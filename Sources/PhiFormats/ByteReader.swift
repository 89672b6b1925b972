import Foundation

/// A bounds-checked little-endian cursor over a file's bytes; every read past the end throws
/// a `FormatError` naming the file, the offset and what was being read.
struct ByteReader {
    let file: URL
    let bytes: UnsafeRawBufferPointer
    var offset: Int

    init(file: URL, bytes: UnsafeRawBufferPointer, offset: Int = 0) {
        self.file = file
        self.bytes = bytes
        self.offset = offset
    }

    var remaining: Int { bytes.count - offset }

    func truncated(_ what: String, needing count: Int) -> FormatError {
        FormatError(file: file, "truncated: \(what) needs \(count) bytes at offset \(offset) but the file has \(bytes.count) bytes; the file is incomplete or corrupt, fetch it again")
    }

    mutating func require(_ count: Int, for what: String) throws {
        guard count >= 0, count <= remaining else { throw truncated(what, needing: count) }
    }

    mutating func read<T: FixedWidthInteger>(_ type: T.Type, _ what: String) throws -> T {
        let size = MemoryLayout<T>.size
        try require(size, for: what)
        let value = bytes.loadUnaligned(fromByteOffset: offset, as: T.self)
        offset += size
        return T(littleEndian: value)
    }

    mutating func readFloat(_ what: String) throws -> Float {
        Float(bitPattern: try read(UInt32.self, what))
    }

    mutating func readDouble(_ what: String) throws -> Double {
        Double(bitPattern: try read(UInt64.self, what))
    }

    /// A count stored as UInt64, checked to fit in Int and to be at most `limit`.
    mutating func readCount(_ what: String, limit: Int) throws -> Int {
        let raw = try read(UInt64.self, what)
        guard raw <= UInt64(limit) else {
            throw FormatError(file: file, "\(what) is \(raw) at offset \(offset - 8), more than the \(limit) the rest of the file can hold; the file is corrupt")
        }
        return Int(raw)
    }

    /// A UTF-8 string of `count` bytes (invalid UTF-8 is repaired, never fatal).
    mutating func readString(count: Int, _ what: String) throws -> String {
        try require(count, for: what)
        let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)])
        offset += count
        return String(decoding: slice, as: UTF8.self)
    }
}
