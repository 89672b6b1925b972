import Foundation

/// Converting GGUF tensors to the engine layout. Block formats map onto affine groups:
/// - Q4_0 (d, 4-bit q): 4-bit groups of 32, scale d, bias −8d (exact);
/// - Q4_1 (d, m, 4-bit q): 4-bit groups of 32, scale d, bias m (exact);
/// - Q8_0 (d, int8 q): 8-bit groups of 32, q + 128, scale d, bias −128d (exact);
/// - Q4_K (super-block d, dmin; 6-bit sc, m per 32): 4-bit groups of 32, scale d·sc, bias −dmin·m;
/// - Q6_K (d; int8 sc per 16; 6-bit q − 32): 8-bit groups of 16, scale d·sc, bias −32·d·sc.
/// For the two K formats the products d·sc and dmin·m are rounded to Float16 (relative error at
/// most 2⁻¹¹ of a group's scale, far below the quantization step itself).
/// F32/F16/BF16 matrices are quantized to 8-bit groups of 32 like unquantized safetensors.
extension GGUFFile {
    /// The 2-D tensor `name` (GGUF shape [columns, rows]) as a (rows, columns) `QuantizedMatrix`.
    public func matrix(named name: String) throws -> QuantizedMatrix {
        guard let info = tensor(named: name) else {
            throw FormatError(file: url, tensor: name, "is missing from the GGUF file; is it a complete model of the architecture it names?")
        }
        return try matrix(info)
    }

    public func matrix(_ info: GGUFTensorInfo) throws -> QuantizedMatrix {
        guard info.shape.count == 2 else {
            throw FormatError(file: url, tensor: info.name, "has shape \(info.shape); a matrix has 2 dimensions")
        }
        let columns = info.shape[0], rows = info.shape[1]
        let storage = try data(of: info)
        if let encoding = FloatEncoding(info.type) {
            return try QuantizedMatrix.quantizing(storage.decodedFloats(encoding), rows: rows, columns: columns,
                                                  tensor: info.name, file: url)
        }
        var decoder: GGUFBlockDecoder
        switch info.type {
        case .q4_0, .q4_1, .q4_K: decoder = GGUFBlockDecoder(rows: rows, columns: columns, bits: 4, groupSize: 32)
        case .q8_0: decoder = GGUFBlockDecoder(rows: rows, columns: columns, bits: 8, groupSize: 32)
        case .q6_K: decoder = GGUFBlockDecoder(rows: rows, columns: columns, bits: 8, groupSize: 16)
        default:
            throw FormatError(file: url, tensor: info.name, "has type \(info.type), which phi-gpu does not convert; use a GGUF quantized as F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K or Q6_K")
        }
        let blockElements = info.type.blockElements ?? 1, blockBytes = info.type.blockBytes ?? 1
        let blockCount = rows * columns / blockElements
        try withExtendedLifetime(storage.owner) {
            let base = storage.bytes
            for block in 0..<blockCount {
                let bytes = UnsafeRawBufferPointer(rebasing: base[(block * blockBytes)..<((block + 1) * blockBytes)])
                let first = block * blockElements  // element index in row-major order
                switch info.type {
                case .q4_0: decoder.q4_0(bytes, first: first)
                case .q4_1: decoder.q4_1(bytes, first: first)
                case .q8_0: decoder.q8_0(bytes, first: first)
                case .q4_K: decoder.q4_K(bytes, first: first)
                default: decoder.q6_K(bytes, first: first)
                }
            }
        }
        return try decoder.finish(tensor: info.name, file: url)
    }

    /// The tensor `name` (F32/F16/BF16, `count` elements) as (count) Float32 storage, e.g. a norm.
    public func vector(named name: String, count: Int) throws -> TensorStorage {
        guard let info = tensor(named: name) else {
            throw FormatError(file: url, tensor: name, "is missing from the GGUF file; is it complete?")
        }
        guard let encoding = FloatEncoding(info.type) else {
            throw FormatError(file: url, tensor: name, "has type \(info.type); a vector must be F32, F16 or BF16")
        }
        guard info.elementCount == count else {
            throw FormatError(file: url, tensor: name, "has \(info.elementCount) elements, expected \(count)")
        }
        let storage = try data(of: info)
        return encoding == .f32 ? storage.aligned(to: 4) : TensorStorage(copying: storage.decodedFloats(encoding))
    }
}

/// Accumulates GGUF blocks into MLX-packed words, Float16 scales and biases.
struct GGUFBlockDecoder {
    let rows: Int, columns: Int, bits: Int, groupSize: Int
    var packed: [UInt32]   // (rows, columns * bits / 32)
    var scales: [Float16]  // (rows, columns / groupSize)
    var biases: [Float16]  // (rows, columns / groupSize)

    init(rows: Int, columns: Int, bits: Int, groupSize: Int) {
        self.rows = rows; self.columns = columns; self.bits = bits; self.groupSize = groupSize
        packed = [UInt32](repeating: 0, count: rows * columns * bits / 32)
        scales = [Float16](repeating: 0, count: rows * columns / groupSize)
        biases = [Float16](repeating: 0, count: rows * columns / groupSize)
    }

    /// Stores quantized value `q` of element `index` (row-major over the whole matrix; rows are
    /// whole blocks, so words never straddle rows).
    @inline(__always) mutating func put(_ q: UInt32, at index: Int) {
        let perWord = 32 / bits
        packed[index / perWord] |= q << UInt32((index % perWord) * bits)
    }

    @inline(__always) mutating func group(at index: Int, scale: Float, bias: Float) {
        scales[index / groupSize] = Float16(scale)
        biases[index / groupSize] = Float16(bias)
    }

    static func half(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> Float {
        Float(Float16(bitPattern: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
    }

    /// Q4_0: d (f16), qs[16]; element j < 16 is qs[j] & 15, element j + 16 is qs[j] >> 4; w = d(q − 8).
    mutating func q4_0(_ b: UnsafeRawBufferPointer, first: Int) {
        let d = Self.half(b, 0)
        group(at: first, scale: d, bias: -8 * d)
        for j in 0..<16 {
            put(UInt32(b[2 + j] & 15), at: first + j)
            put(UInt32(b[2 + j] >> 4), at: first + j + 16)
        }
    }

    /// Q4_1: d, m (f16), qs[16] as Q4_0; w = d·q + m.
    mutating func q4_1(_ b: UnsafeRawBufferPointer, first: Int) {
        group(at: first, scale: Self.half(b, 0), bias: Self.half(b, 2))
        for j in 0..<16 {
            put(UInt32(b[4 + j] & 15), at: first + j)
            put(UInt32(b[4 + j] >> 4), at: first + j + 16)
        }
    }

    /// Q8_0: d (f16), qs[32] int8; w = d·q = d(q + 128) − 128d.
    mutating func q8_0(_ b: UnsafeRawBufferPointer, first: Int) {
        let d = Self.half(b, 0)
        group(at: first, scale: d, bias: -128 * d)
        for j in 0..<32 { put(UInt32(b[2 + j] ^ 0x80), at: first + j) }
    }

    /// Q4_K: d, dmin (f16), scales[12] (6-bit sc and m of 8 sub-blocks), qs[128]; sub-block pairs
    /// (2i, 2i+1) take the low and high nibbles of qs[32i ..< 32i + 32]; w = d·sc·q − dmin·m.
    mutating func q4_K(_ b: UnsafeRawBufferPointer, first: Int) {
        let d = Self.half(b, 0), dmin = Self.half(b, 2)
        func scaleMin(_ j: Int) -> (Float, Float) {
            let s = { (i: Int) in b[4 + i] }
            if j < 4 { return (Float(s(j) & 63), Float(s(j + 4) & 63)) }
            return (Float((s(j + 4) & 0xF) | ((s(j - 4) >> 6) << 4)), Float((s(j + 4) >> 4) | ((s(j) >> 6) << 4)))
        }
        for chunk in 0..<4 {
            let (sc1, m1) = scaleMin(2 * chunk), (sc2, m2) = scaleMin(2 * chunk + 1)
            let low = first + 64 * chunk, high = low + 32
            group(at: low, scale: d * sc1, bias: -dmin * m1)
            group(at: high, scale: d * sc2, bias: -dmin * m2)
            for l in 0..<32 {
                let q = b[16 + 32 * chunk + l]
                put(UInt32(q & 15), at: low + l)
                put(UInt32(q >> 4), at: high + l)
            }
        }
    }

    /// Q6_K: ql[128], qh[64], scales[16] (int8), d (f16); 6-bit q from ql nibbles and qh pairs;
    /// w = d·sc·(q − 32) for sub-blocks of 16.
    mutating func q6_K(_ b: UnsafeRawBufferPointer, first: Int) {
        let d = Self.half(b, 208)
        for g in 0..<16 {
            let scale = d * Float(Int8(bitPattern: b[192 + g]))
            let rounded = Float(Float16(scale))
            group(at: first + 16 * g, scale: rounded, bias: -32 * rounded)
        }
        for half in 0..<2 {
            let ql = 64 * half, qh = 128 + 32 * half, out = first + 128 * half
            for l in 0..<32 {
                let h = b[qh + l]
                put(UInt32((b[ql + l] & 0xF) | ((h & 3) << 4)), at: out + l)
                put(UInt32((b[ql + l + 32] & 0xF) | (((h >> 2) & 3) << 4)), at: out + l + 32)
                put(UInt32((b[ql + l] >> 4) | (((h >> 4) & 3) << 4)), at: out + l + 64)
                put(UInt32((b[ql + l + 32] >> 4) | (((h >> 6) & 3) << 4)), at: out + l + 96)
            }
        }
    }

    /// The matrix; throws if a scale or bias overflowed Float16 (a corrupt block).
    func finish(tensor: String, file: URL) throws -> QuantizedMatrix {
        for i in 0..<scales.count where !scales[i].isFinite || !biases[i].isFinite {
            throw FormatError(file: file, tensor: tensor, "block of group \(i) has a scale or bias that is not finite in Float16; the file is corrupt")
        }
        return QuantizedMatrix(rows: rows, columns: columns, bits: bits, groupSize: groupSize,
                               packed: TensorStorage(copying: packed), scales: TensorStorage(copying: scales),
                               biases: TensorStorage(copying: biases))
    }
}
