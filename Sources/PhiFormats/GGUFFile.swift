import Foundation

/// One tensor listed in a GGUF file's header.
public struct GGUFTensorInfo: Sendable {
    public let name: String
    public let type: GGMLType
    /// Dimensions in GGUF (ggml) order: `shape[0]` is the innermost, contiguous one (the row
    /// length, i.e. columns of a matrix); a (rows, columns) matrix is stored as `[columns, rows]`.
    public let shape: [Int]
    /// Byte offset of the tensor's data from the start of the file's data section.
    public let offset: Int

    /// Product of the dimensions.
    public var elementCount: Int { shape.reduce(1, *) }
    /// `shape[0]`: elements per row.
    public var rowLength: Int { shape.first ?? 1 }
    /// Rows: the product of all dimensions but the first.
    public var rowCount: Int { shape.dropFirst().reduce(1, *) }
    /// Bytes of data, or nil when the type's layout is unknown.
    public var byteCount: Int? { type.byteCount(elements: elementCount, rowLength: rowLength) }
}

/// A GGUF file (versions 2 and 3), memory-mapped: its metadata and its tensor directory, with
/// tensor bytes read straight from the mapping.
public final class GGUFFile: @unchecked Sendable {
    public let url: URL
    public let version: Int
    public let metadata: [String: GGUFValue]
    /// The tensors in file order.
    public let tensors: [GGUFTensorInfo]
    /// `general.alignment`, 32 by default.
    public let alignment: Int
    /// Absolute file offset of the data section, where tensor offsets start.
    public let dataOffset: Int
    /// The mapping all tensor storage points into.
    public let mapping: MappedFile

    private let tensorIndex: [String: Int]

    /// Deepest array nesting accepted in metadata (real files use 1).
    static let maximumArrayDepth = 3
    /// ggml's GGML_MAX_DIMS.
    static let maximumDimensions = 4

    public init(contentsOf url: URL) throws {
        self.url = url
        mapping = try MappedFile(url: url)
        var reader = ByteReader(file: url, bytes: mapping.bytes)

        let magic = try reader.read(UInt32.self, "magic")
        guard magic == 0x4655_4747 else {  // "GGUF" little-endian
            throw FormatError(file: url, "is not a GGUF file (magic \(String(magic, radix: 16)) is not 'GGUF')")
        }
        let rawVersion = try reader.read(UInt32.self, "version")
        guard rawVersion == 2 || rawVersion == 3 else {
            if rawVersion.byteSwapped == 2 || rawVersion.byteSwapped == 3 {
                throw FormatError(file: url, "is a big-endian GGUF, which phi-gpu does not read; use a little-endian file")
            }
            throw FormatError(file: url, "has GGUF version \(rawVersion); phi-gpu reads versions 2 and 3 (convert it again with a recent llama.cpp)")
        }
        version = Int(rawVersion)
        // Each tensor info takes at least 8+4+4+8 bytes; each key/value at least 8+4+1.
        let tensorCount = try reader.readCount("tensor count", limit: reader.remaining / 24)
        let keyCount = try reader.readCount("metadata key count", limit: reader.remaining / 13)

        var metadata: [String: GGUFValue] = [:]
        metadata.reserveCapacity(keyCount)
        for _ in 0..<keyCount {
            let keyLength = try reader.readCount("metadata key length", limit: reader.remaining)
            let key = try reader.readString(count: keyLength, "metadata key")
            let type = try reader.read(UInt32.self, "type of '\(key)'")
            let value = try Self.readValue(type: type, key: key, depth: 0, reader: &reader)
            guard metadata.updateValue(value, forKey: key) == nil else {
                throw FormatError(file: url, tensor: key, "metadata key appears twice; the file is corrupt")
            }
        }
        self.metadata = metadata

        var alignment = 32
        if let value = metadata["general.alignment"] {
            guard let a = value.intValue, a > 0, a <= 1 << 20, a & (a - 1) == 0 else {
                throw FormatError(file: url, tensor: "general.alignment", "must be a power of two, is \(value)")
            }
            alignment = a
        }
        self.alignment = alignment

        var tensors: [GGUFTensorInfo] = []
        tensors.reserveCapacity(tensorCount)
        var index: [String: Int] = [:]
        for _ in 0..<tensorCount {
            let nameLength = try reader.readCount("tensor name length", limit: reader.remaining)
            let name = try reader.readString(count: nameLength, "tensor name")
            let dimensionCount = try reader.read(UInt32.self, "dimension count of '\(name)'")
            guard dimensionCount >= 1, dimensionCount <= UInt32(Self.maximumDimensions) else {
                throw FormatError(file: url, tensor: name, "has \(dimensionCount) dimensions; GGUF tensors have 1 to \(Self.maximumDimensions)")
            }
            var shape: [Int] = []
            var elements = 1
            for _ in 0..<Int(dimensionCount) {
                let d = try reader.read(UInt64.self, "dimension of '\(name)'")
                guard d >= 1, d < UInt64(Int32.max) else {
                    throw FormatError(file: url, tensor: name, "has dimension \(d); the header is corrupt")
                }
                let (product, overflow) = elements.multipliedReportingOverflow(by: Int(d))
                guard !overflow, product <= mapping.bytes.count * 8 else {
                    throw FormatError(file: url, tensor: name, "has more elements than the file can hold; the header is corrupt")
                }
                elements = product
                shape.append(Int(d))
            }
            let type = GGMLType(rawValue: try reader.read(UInt32.self, "type of '\(name)'"))
            let offset = try reader.read(UInt64.self, "offset of '\(name)'")
            guard offset <= UInt64(mapping.bytes.count), Int(offset) % alignment == 0 else {
                throw FormatError(file: url, tensor: name, "has data offset \(offset), past the end of the file or not a multiple of the alignment \(alignment); the file is corrupt")
            }
            guard index.updateValue(tensors.count, forKey: name) == nil else {
                throw FormatError(file: url, tensor: name, "tensor appears twice; the file is corrupt")
            }
            tensors.append(GGUFTensorInfo(name: name, type: type, shape: shape, offset: Int(offset)))
        }
        let headerEnd = reader.offset
        dataOffset = (headerEnd + alignment - 1) / alignment * alignment
        self.tensors = tensors
        tensorIndex = index
        try validateTensorRanges()
    }

    /// Every tensor of a known type must lie inside the file and not overlap the next one.
    private func validateTensorRanges() throws {
        let available = mapping.bytes.count - dataOffset
        var ranges: [(start: Int, end: Int, name: String)] = []
        for tensor in tensors {
            guard let count = tensor.byteCount else {
                if tensor.type.blockElements != nil {
                    throw FormatError(file: url, tensor: tensor.name, "row length \(tensor.rowLength) is not a whole number of \(tensor.type) blocks of \(tensor.type.blockElements ?? 0)")
                }
                continue  // unknown type: size unknown; conversion will refuse it by name
            }
            guard tensor.offset <= available, count <= available - tensor.offset else {
                throw FormatError(file: url, tensor: tensor.name, "data (\(count) bytes at data offset \(tensor.offset)) runs past the end of the file (\(mapping.bytes.count) bytes); the file is truncated, fetch it again")
            }
            ranges.append((tensor.offset, tensor.offset + count, tensor.name))
        }
        ranges.sort { $0.start < $1.start }
        for (a, b) in zip(ranges, ranges.dropFirst()) where b.start < a.end {
            throw FormatError(file: url, tensor: b.name, "data overlaps that of '\(a.name)'; the file is corrupt")
        }
    }

    private static func readValue(type: UInt32, key: String, depth: Int, reader: inout ByteReader) throws -> GGUFValue {
        switch type {
        case 0: return .uint8(try reader.read(UInt8.self, key))
        case 1: return .int8(try reader.read(Int8.self, key))
        case 2: return .uint16(try reader.read(UInt16.self, key))
        case 3: return .int16(try reader.read(Int16.self, key))
        case 4: return .uint32(try reader.read(UInt32.self, key))
        case 5: return .int32(try reader.read(Int32.self, key))
        case 6: return .float32(try reader.readFloat(key))
        case 7:
            let byte = try reader.read(UInt8.self, key)
            guard byte <= 1 else { throw FormatError(file: reader.file, tensor: key, "bool value is \(byte), not 0 or 1; the file is corrupt") }
            return .bool(byte == 1)
        case 8:
            let length = try reader.readCount("length of string '\(key)'", limit: reader.remaining)
            return .string(try reader.readString(count: length, key))
        case 9:
            guard depth < maximumArrayDepth else {
                throw FormatError(file: reader.file, tensor: key, "arrays nest deeper than \(maximumArrayDepth); the file is corrupt")
            }
            let elementType = try reader.read(UInt32.self, "element type of '\(key)'")
            guard let minimumSize = minimumValueSize(elementType) else {
                throw FormatError(file: reader.file, tensor: key, "array has unknown element type \(elementType); the file is corrupt or newer than phi-gpu")
            }
            let count = try reader.readCount("length of array '\(key)'", limit: reader.remaining / minimumSize)
            var elements: [GGUFValue] = []
            elements.reserveCapacity(count)
            if elementType == 8 {  // strings: the hot path for 200k-token vocabularies
                for _ in 0..<count {
                    let length = try reader.readCount("length of a string in '\(key)'", limit: reader.remaining)
                    elements.append(.string(try reader.readString(count: length, key)))
                }
            } else {
                for _ in 0..<count {
                    elements.append(try readValue(type: elementType, key: key, depth: depth + 1, reader: &reader))
                }
            }
            return .array(elements)
        case 10: return .uint64(try reader.read(UInt64.self, key))
        case 11: return .int64(try reader.read(Int64.self, key))
        case 12: return .float64(try reader.readDouble(key))
        default:
            throw FormatError(file: reader.file, tensor: key, "has unknown metadata value type \(type); the file is corrupt or newer than phi-gpu")
        }
    }

    /// Bytes the smallest value of a type occupies, or nil for an unknown type.
    private static func minimumValueSize(_ type: UInt32) -> Int? {
        switch type {
        case 0, 1, 7: return 1
        case 2, 3: return 2
        case 4, 5, 6: return 4
        case 8, 10, 11, 12: return 8
        case 9: return 12
        default: return nil
        }
    }

    /// The tensor named `name`, if the file has it.
    public func tensor(named name: String) -> GGUFTensorInfo? {
        tensorIndex[name].map { tensors[$0] }
    }

    /// The raw bytes of `tensor`, viewed in the mapping (ranges were checked on open).
    public func data(of tensor: GGUFTensorInfo) throws -> TensorStorage {
        guard let count = tensor.byteCount else {
            throw FormatError(file: url, tensor: tensor.name, "has \(tensor.type), which phi-gpu cannot read; use a file quantized as F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K or Q6_K")
        }
        return mapping.storage(offset: dataOffset + tensor.offset, count: count)
    }

    /// `general.architecture`, e.g. "phi3" or "llama".
    public var architecture: String? { metadata["general.architecture"]?.stringValue }
}
