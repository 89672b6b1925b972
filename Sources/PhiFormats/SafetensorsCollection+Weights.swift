import Foundation

/// Reading engine-layout weights out of MLX / Hugging Face safetensors checkpoints.
extension SafetensorsCollection {
    /// `base.weight` as a `QuantizedMatrix` of `rows` × `columns`:
    /// - MLX affine-quantized (`base.weight` U32 (rows, columns·bits/32), `base.scales` and
    ///   `base.biases` (rows, columns/groupSize)): the packed words are used in place; scales and
    ///   biases are viewed in place when F16, converted to Float16 when BF16/F32.
    /// - F32/F16/BF16 (rows, columns): quantized to 8-bit affine groups of 32 (see
    ///   `QuantizedMatrix.unquantizedBits`).
    /// `quantization` gives (bits, groupSize) for this layer, nil if the config says unquantized.
    public func matrix(_ base: String, rows: Int, columns: Int, quantization: (bits: Int, groupSize: Int)?) throws -> QuantizedMatrix {
        let name = base + ".weight"
        guard let (file, weight) = tensor(named: name) else {
            throw FormatError(file: directory, tensor: name, "is missing from the checkpoint; is it complete and of the architecture config.json names?")
        }
        if weight.dtype == .u32 {
            guard let (bits, groupSize) = quantization else {
                throw FormatError(file: file.url, tensor: name, "is U32 (quantized) but config.json has no quantization for it")
            }
            return try mlxQuantized(base, weight: weight, in: file, rows: rows, columns: columns, bits: bits, groupSize: groupSize)
        }
        guard let encoding = FloatEncoding(weight.dtype) else {
            throw FormatError(file: file.url, tensor: name, "has dtype \(weight.dtype.rawValue); expected U32 (MLX quantized) or F32/F16/BF16")
        }
        guard weight.shape == [rows, columns] else {
            throw FormatError(file: file.url, tensor: name, "has shape \(weight.shape), expected [\(rows), \(columns)] from config.json")
        }
        return try QuantizedMatrix.quantizing(file.data(of: weight).decodedFloats(encoding), rows: rows, columns: columns,
                                              tensor: name, file: file.url)
    }

    private func mlxQuantized(_ base: String, weight: SafetensorsTensorInfo, in file: SafetensorsFile,
                              rows: Int, columns: Int, bits: Int, groupSize: Int) throws -> QuantizedMatrix {
        let name = base + ".weight"
        guard bits == 4 || bits == 8, [16, 32, 64, 128].contains(groupSize), columns % groupSize == 0 else {
            throw FormatError(file: file.url, tensor: name, "quantization bits \(bits), group size \(groupSize) for \(columns) columns is not supported (bits 4 or 8; groups 32, 64 or 128 dividing the columns)")
        }
        guard weight.shape == [rows, columns * bits / 32] else {
            throw FormatError(file: file.url, tensor: name, "has shape \(weight.shape), expected [\(rows), \(columns * bits / 32)] for \(rows) × \(columns) at \(bits) bits; config.json's quantization does not match the weights")
        }
        func groupTensor(_ suffix: String) throws -> TensorStorage {
            let groupName = base + "." + suffix
            guard let (groupFile, info) = tensor(named: groupName) else {
                throw FormatError(file: file.url, tensor: groupName, "is missing: quantized weights need scales and biases")
            }
            guard let encoding = FloatEncoding(info.dtype) else {
                throw FormatError(file: groupFile.url, tensor: groupName, "has dtype \(info.dtype.rawValue); expected F16, BF16 or F32")
            }
            guard info.shape == [rows, columns / groupSize] else {
                throw FormatError(file: groupFile.url, tensor: groupName, "has shape \(info.shape), expected [\(rows), \(columns / groupSize)] for group size \(groupSize)")
            }
            return groupFile.data(of: info).asFloat16(encoding).aligned(to: 2)
        }
        return QuantizedMatrix(rows: rows, columns: columns, bits: bits, groupSize: groupSize,
                               packed: file.data(of: weight).aligned(to: 4), scales: try groupTensor("scales"), biases: try groupTensor("biases"))
    }

    /// `name` (F32/F16/BF16, `count` elements) as (count) Float32 storage, e.g. a norm weight.
    public func vector(_ name: String, count: Int) throws -> TensorStorage {
        guard let (file, info) = tensor(named: name) else {
            throw FormatError(file: directory, tensor: name, "is missing from the checkpoint; is it complete?")
        }
        guard let encoding = FloatEncoding(info.dtype) else {
            throw FormatError(file: file.url, tensor: name, "has dtype \(info.dtype.rawValue); expected F32, F16 or BF16")
        }
        guard info.elementCount == count, info.shape.count == 1 else {
            throw FormatError(file: file.url, tensor: name, "has shape \(info.shape), expected [\(count)]")
        }
        if encoding == .f32 { return file.data(of: info).aligned(to: 4) }
        return TensorStorage(copying: file.data(of: info).decodedFloats(encoding))
    }
}
