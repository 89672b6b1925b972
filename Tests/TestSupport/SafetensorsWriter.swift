import Foundation

/// Writes small `.safetensors` files for tests: tensors are added in order and laid out back to
/// back; `header` can be edited before writing to make corrupt files on purpose.
public struct SafetensorsWriter {
    /// The header entries: name → ["dtype": ..., "shape": [...], "data_offsets": [start, end]].
    public var header: [String: Any] = ["__metadata__": ["format": "mlx"]]
    /// The data section.
    public var data = Data()

    public init() {}

    /// Adds a tensor of raw little-endian bytes.
    public mutating func add(_ name: String, dtype: String, shape: [Int], bytes: Data) {
        header[name] = ["dtype": dtype, "shape": shape, "data_offsets": [data.count, data.count + bytes.count]]
        data.append(bytes)
    }

    public mutating func add(_ name: String, shape: [Int], float32 values: [Float]) {
        add(name, dtype: "F32", shape: shape, bytes: values.withUnsafeBytes { Data($0) })
    }

    public mutating func add(_ name: String, shape: [Int], float16 values: [Float]) {
        add(name, dtype: "F16", shape: shape, bytes: values.map { Float16($0) }.withUnsafeBytes { Data($0) })
    }

    /// BF16 by truncating each Float32 to its top 16 bits (the values should be exact in BF16).
    public mutating func add(_ name: String, shape: [Int], bfloat16 values: [Float]) {
        add(name, dtype: "BF16", shape: shape, bytes: values.map { UInt16($0.bitPattern >> 16) }.withUnsafeBytes { Data($0) })
    }

    public mutating func add(_ name: String, shape: [Int], uint32 values: [UInt32]) {
        add(name, dtype: "U32", shape: shape, bytes: values.withUnsafeBytes { Data($0) })
    }

    /// The file's bytes: 8-byte header length, JSON header padded with spaces to 8 bytes, data.
    public func fileBytes() throws -> Data {
        var json = try JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])
        while json.count % 8 != 0 { json.append(0x20) }
        var bytes = Data()
        withUnsafeBytes(of: UInt64(json.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(json)
        bytes.append(data)
        return bytes
    }

    public func write(to url: URL) throws {
        try fileBytes().write(to: url)
    }
}
