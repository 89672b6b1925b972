import PhiFormats
import PhiModel

/// A CPU activation tensor: (rows, columns) Float32 in one 64-byte aligned allocation.
public final class CPUTensor: BackendTensor, @unchecked Sendable {
    let storage: OwnedBytes
    /// (rows, columns) Float32.
    let pointer: UnsafeMutablePointer<Float>

    public override init(rows: Int, columns: Int) {
        storage = OwnedBytes(byteCount: rows * columns * MemoryLayout<Float>.stride)
        pointer = storage.pointer.bindMemory(to: Float.self, capacity: rows * columns)
        pointer.initialize(repeating: 0, count: rows * columns)
        super.init(rows: rows, columns: columns)
    }

    /// Row `row`'s first element.
    func row(_ row: Int) -> UnsafeMutablePointer<Float> { pointer + row * columns }
}
