import Foundation

/// Element types of safetensors tensors.
public enum SafetensorsDType: String, Sendable {
    case f64 = "F64", f32 = "F32", f16 = "F16", bf16 = "BF16"
    case i64 = "I64", i32 = "I32", i16 = "I16", i8 = "I8"
    case u64 = "U64", u32 = "U32", u16 = "U16", u8 = "U8", bool = "BOOL"

    /// Bytes per element.
    public var size: Int {
        switch self {
        case .f64, .i64, .u64: return 8
        case .f32, .i32, .u32: return 4
        case .f16, .bf16, .i16, .u16: return 2
        case .i8, .u8, .bool: return 1
        }
    }
}

/// One tensor of a safetensors file: its type, (row-major) shape and byte range.
public struct SafetensorsTensorInfo: Sendable {
    public let name: String
    public let dtype: SafetensorsDType
    /// Row-major shape, outermost first (PyTorch / numpy order).
    public let shape: [Int]
    /// Byte offset from the start of the data section (just after the header).
    public let dataOffset: Int
    public let byteCount: Int

    public var elementCount: Int { shape.reduce(1, *) }
}

/// A `.safetensors` file, memory-mapped, with its header validated: every tensor's dtype is known,
/// its byte range matches its shape, lies inside the file and overlaps no other tensor.
public final class SafetensorsFile: @unchecked Sendable {
    public let url: URL
    public let tensors: [String: SafetensorsTensorInfo]
    /// The `__metadata__` block (string to string).
    public let metadata: [String: String]
    public let mapping: MappedFile
    /// Absolute file offset of the data section (8 + header length).
    public let dataStart: Int

    /// Largest JSON header accepted (the format's own limit is 100 MB).
    static let maximumHeaderBytes = 100_000_000

    public init(contentsOf url: URL) throws {
        self.url = url
        mapping = try MappedFile(url: url)
        var reader = ByteReader(file: url, bytes: mapping.bytes)
        let headerLength = try reader.read(UInt64.self, "header length")
        guard headerLength <= UInt64(min(Self.maximumHeaderBytes, reader.remaining)) else {
            throw FormatError(file: url, "header length \(headerLength) is larger than the file (\(mapping.bytes.count) bytes) or 100 MB; the file is truncated or not safetensors")
        }
        let headerBytes = Data(UnsafeRawBufferPointer(rebasing: mapping.bytes[8..<(8 + Int(headerLength))]))
        dataStart = 8 + Int(headerLength)
        let json: Any
        do {
            json = try JSONSerialization.jsonObject(with: headerBytes)
        } catch {
            throw FormatError(file: url, "header is not valid JSON (\(error.localizedDescription)); the file is corrupt")
        }
        guard let header = json as? [String: Any] else {
            throw FormatError(file: url, "header is not a JSON object; the file is corrupt")
        }
        var metadata: [String: String] = [:]
        var tensors: [String: SafetensorsTensorInfo] = [:]
        let dataLength = mapping.bytes.count - dataStart
        for (name, entry) in header {
            if name == "__metadata__" {
                guard let block = entry as? [String: Any] else {
                    throw FormatError(file: url, tensor: name, "is not an object")
                }
                for (key, value) in block { metadata[key] = value as? String ?? "\(value)" }
                continue
            }
            tensors[name] = try Self.parseTensor(name: name, entry: entry, dataLength: dataLength, file: url)
        }
        let sorted = tensors.values.filter { $0.byteCount > 0 }.sorted { $0.dataOffset < $1.dataOffset }
        for (a, b) in zip(sorted, sorted.dropFirst()) where b.dataOffset < a.dataOffset + a.byteCount {
            throw FormatError(file: url, tensor: b.name, "bytes \(b.dataOffset)..<\(b.dataOffset + b.byteCount) overlap those of '\(a.name)'; the file is corrupt")
        }
        self.tensors = tensors
        self.metadata = metadata
    }

    private static func parseTensor(name: String, entry: Any, dataLength: Int, file: URL) throws -> SafetensorsTensorInfo {
        guard let fields = entry as? [String: Any] else {
            throw FormatError(file: file, tensor: name, "header entry is not an object; the file is corrupt")
        }
        guard let dtypeName = fields["dtype"] as? String else {
            throw FormatError(file: file, tensor: name, "has no dtype; the file is corrupt")
        }
        guard let dtype = SafetensorsDType(rawValue: dtypeName) else {
            throw FormatError(file: file, tensor: name, "has dtype \(dtypeName), which phi-gpu does not read (F32, F16, BF16, U32 and other integer types are)")
        }
        guard let shapeValues = fields["shape"] as? [Any], shapeValues.count <= 8 else {
            throw FormatError(file: file, tensor: name, "has no shape or more than 8 dimensions; the file is corrupt")
        }
        var shape: [Int] = []
        var elements = 1
        for value in shapeValues {
            guard let number = value as? NSNumber, let d = Int(exactly: number.doubleValue), d >= 0 else {
                throw FormatError(file: file, tensor: name, "has shape \(shapeValues), which is not a list of non-negative integers")
            }
            let (product, overflow) = elements.multipliedReportingOverflow(by: d)
            guard !overflow else { throw FormatError(file: file, tensor: name, "shape \(shapeValues) overflows") }
            elements = product
            shape.append(d)
        }
        guard let offsets = fields["data_offsets"] as? [Any], offsets.count == 2,
              let startNumber = offsets[0] as? NSNumber, let endNumber = offsets[1] as? NSNumber,
              let start = Int(exactly: startNumber.doubleValue), let end = Int(exactly: endNumber.doubleValue),
              start >= 0, start <= end
        else {
            throw FormatError(file: file, tensor: name, "has invalid data_offsets \(fields["data_offsets"] ?? "none"); the file is corrupt")
        }
        guard end <= dataLength else {
            throw FormatError(file: file, tensor: name, "data_offsets [\(start), \(end)] run past the end of the data (\(dataLength) bytes); the file is truncated, fetch it again")
        }
        let (expected, overflow) = elements.multipliedReportingOverflow(by: dtype.size)
        guard !overflow, expected == end - start else {
            throw FormatError(file: file, tensor: name, "shape \(shape) of \(dtypeName) needs \(elements) × \(dtype.size) bytes but data_offsets give \(end - start); the file is corrupt")
        }
        return SafetensorsTensorInfo(name: name, dtype: dtype, shape: shape, dataOffset: start, byteCount: end - start)
    }

    /// The bytes of `tensor`, viewed in the mapping.
    public func data(of tensor: SafetensorsTensorInfo) -> TensorStorage {
        mapping.storage(offset: dataStart + tensor.dataOffset, count: tensor.byteCount)
    }
}

/// The safetensors weights of a checkpoint directory: `model.safetensors.index.json` and its
/// shards, or a single `model.safetensors`, or else every `*.safetensors` file in the directory.
public final class SafetensorsCollection: @unchecked Sendable {
    public let directory: URL
    /// Every tensor name, mapped to the file that holds it.
    public let files: [String: SafetensorsFile]

    public init(directory: URL) throws {
        self.directory = directory
        let manager = FileManager.default
        let index = directory.appendingPathComponent("model.safetensors.index.json")
        var shardNames: [String]
        var expected: [String: String] = [:]
        if manager.fileExists(atPath: index.path) {
            let data: Data
            do { data = try Data(contentsOf: index) } catch {
                throw FormatError(file: index, "cannot be read: \(error.localizedDescription)")
            }
            guard let root = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                  let map = root["weight_map"] as? [String: Any]
            else {
                throw FormatError(file: index, "is not valid JSON with a \"weight_map\" object; fetch the checkpoint again")
            }
            for (tensor, file) in map {
                guard let name = file as? String, !name.contains("/"), !name.contains("\\"), name != "..", !name.isEmpty else {
                    throw FormatError(file: index, tensor: tensor, "names shard \(file), which is not a file name in the directory")
                }
                expected[tensor] = name
            }
            shardNames = Array(Set(expected.values)).sorted()
        } else if manager.fileExists(atPath: directory.appendingPathComponent("model.safetensors").path) {
            shardNames = ["model.safetensors"]
        } else {
            let listing = (try? manager.contentsOfDirectory(atPath: directory.path)) ?? []
            shardNames = listing.filter { $0.hasSuffix(".safetensors") }.sorted()
        }
        guard !shardNames.isEmpty else {
            throw FormatError(file: directory, "has no model.safetensors, model.safetensors.index.json or other .safetensors file; is this an MLX checkpoint directory?")
        }
        var files: [String: SafetensorsFile] = [:]
        for shardName in shardNames {
            let url = directory.appendingPathComponent(shardName)
            guard manager.fileExists(atPath: url.path) else {
                throw FormatError(file: url, "is missing (listed in model.safetensors.index.json); fetch the checkpoint again")
            }
            let shard = try SafetensorsFile(contentsOf: url)
            for name in shard.tensors.keys {
                if let other = files[name], other !== shard {
                    throw FormatError(file: url, tensor: name, "is also in \(other.url.lastPathComponent)")
                }
                files[name] = shard
            }
        }
        for (tensor, shardName) in expected where files[tensor]?.url.lastPathComponent != shardName {
            throw FormatError(file: directory.appendingPathComponent(shardName), tensor: tensor, "is listed in model.safetensors.index.json but missing from the shard; fetch the checkpoint again")
        }
        self.files = files
    }

    /// The tensor named `name` and the file that holds it, if any.
    public func tensor(named name: String) -> (file: SafetensorsFile, info: SafetensorsTensorInfo)? {
        guard let file = files[name], let info = file.tensors[name] else { return nil }
        return (file, info)
    }

    public var tensorNames: [String] { files.keys.sorted() }
}
