import PhiFormats
import PhiModel
import VulkanKit

/// A quantized matrix in device-local memory, in the engine layout (see `QuantizedMatrix`).
struct GPUMatrix {
    let rows: Int
    let columns: Int
    let bits: Int
    let groupSize: Int
    /// (rows, columns · bits / 32) packed values.
    let packed: Buffer
    /// (rows, columns / groupSize) Float16, read by the shaders as packed pairs.
    let scales: Buffer
    /// (rows, columns / groupSize) Float16, read by the shaders as packed pairs.
    let biases: Buffer

    /// Device bytes a matrix needs.
    static func byteCount(of matrix: QuantizedMatrix) -> Int {
        matrix.packed.byteCount + padded(matrix.scales.byteCount) + padded(matrix.biases.byteCount)
    }

    static func padded(_ bytes: Int) -> Int { (bytes + 3) / 4 * 4 }

    /// Uploads `matrix`, calling `progress` with the bytes sent so far for it.
    init(_ matrix: QuantizedMatrix, name: String, context: GPUContext, progress: (Int) -> Void) throws {
        guard matrix.bits == 4 || matrix.bits == 8 else {
            throw BackendError.unsupportedWeight(name: name, reason: "\(matrix.bits)-bit values (the GPU kernels read 4 or 8)")
        }
        guard matrix.columns % 4 == 0, matrix.groupSize % (32 / matrix.bits) == 0 else {
            throw BackendError.unsupportedWeight(name: name, reason: "\(matrix.columns) columns in groups of \(matrix.groupSize)")
        }
        rows = matrix.rows
        columns = matrix.columns
        bits = matrix.bits
        groupSize = matrix.groupSize
        let device = context.device
        packed = try Buffer(device: device, byteCount: matrix.packed.byteCount, location: .deviceLocal, label: "\(name).packed")
        scales = try Buffer(device: device, byteCount: Self.padded(matrix.scales.byteCount), location: .deviceLocal, label: "\(name).scales")
        biases = try Buffer(device: device, byteCount: Self.padded(matrix.biases.byteCount), location: .deviceLocal, label: "\(name).biases")
        var sent = 0
        try withoutActuallyEscaping(progress) { progress in
            try withExtendedLifetime(matrix.packed.owner) {
                try packed.upload(matrix.packed.bytes) { progress(sent + $0) }
            }
        }
        sent += matrix.packed.byteCount
        try withExtendedLifetime(matrix.scales.owner) { try scales.upload(matrix.scales.bytes) }
        try withExtendedLifetime(matrix.biases.owner) { try biases.upload(matrix.biases.bytes) }
        progress(Self.byteCount(of: matrix))
    }
}

/// Float32 tensors in device memory: activations (`GPUTensor`) are what the forward pass passes around.
public final class GPUTensor: BackendTensor, @unchecked Sendable {
    /// (rows, columns) Float32.
    public let buffer: Buffer

    init(rows: Int, columns: Int, context: GPUContext, label: String = "activation") throws {
        buffer = try Buffer(device: context.device, byteCount: rows * columns * 4, location: .deviceLocal, label: label)
        super.init(rows: rows, columns: columns)
    }
}
