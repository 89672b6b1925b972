/// The floating-point encodings checkpoints store unquantized tensors in.
public enum FloatEncoding: String, Sendable {
    case f32 = "F32", f16 = "F16", bf16 = "BF16"

    /// Bytes per element.
    public var size: Int { self == .f32 ? 4 : 2 }

    public init?(_ dtype: SafetensorsDType) {
        switch dtype {
        case .f32: self = .f32
        case .f16: self = .f16
        case .bf16: self = .bf16
        default: return nil
        }
    }

    public init?(_ type: GGMLType) {
        switch type {
        case .f32: self = .f32
        case .f16: self = .f16
        case .bf16: self = .bf16
        default: return nil
        }
    }
}

extension TensorStorage {
    /// The bytes as (byteCount / encoding.size) Float32 values.
    public func decodedFloats(_ encoding: FloatEncoding) -> [Float] {
        let count = byteCount / encoding.size
        return [Float](unsafeUninitializedCapacity: count) { output, initialized in
            withExtendedLifetime(owner) {
                switch encoding {
                case .f32:
                    for i in 0..<count { output[i] = bytes.loadUnaligned(fromByteOffset: 4 * i, as: Float.self) }
                case .f16:
                    for i in 0..<count {
                        output[i] = Float(Float16(bitPattern: bytes.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self)))
                    }
                case .bf16:
                    for i in 0..<count {
                        let high = UInt32(bytes.loadUnaligned(fromByteOffset: 2 * i, as: UInt16.self))
                        output[i] = Float(bitPattern: high << 16)
                    }
                }
            }
            initialized = count
        }
    }

    /// The bytes as Float16 storage: returned as is when already F16, else converted (rounding
    /// to nearest; BF16 and F32 values inside Float16's range with ≤ 11 significant bits are exact).
    public func asFloat16(_ encoding: FloatEncoding) -> TensorStorage {
        if encoding == .f16 { return self }
        return TensorStorage(copying: decodedFloats(encoding).map { Float16($0) })
    }
}

extension TensorStorage {
    /// This storage if its address is a multiple of `alignment`, else an aligned copy (views into
    /// a mapped file sit wherever the file put them; typed access needs natural alignment).
    public func aligned(to alignment: Int) -> TensorStorage {
        guard let base = bytes.baseAddress, Int(bitPattern: base) % alignment != 0 else { return self }
        let box = OwnedBytes(byteCount: byteCount)
        withExtendedLifetime(owner) { box.pointer.copyMemory(from: base, byteCount: byteCount) }
        return TensorStorage(owner: box, bytes: UnsafeRawBufferPointer(start: box.pointer, count: byteCount))
    }
}
