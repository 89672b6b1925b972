/// The engine's one weight layout for a quantized matrix: MLX-style affine groups.
///
/// Every checkpoint format is converted into this on load (MLX 4/8-bit is it already; GGUF Q4_0,
/// Q4_1, Q4_K are 4-bit affine groups, Q8_0 and Q6_K 8-bit ones), so each kernel exists once.
///
/// A row of `columns` weights is cut into groups of `groupSize`; element `c` of row `r` is
/// `w[r, c] = scale[r, c / groupSize] * q[r, c] + bias[r, c / groupSize]`, where `q` is an
/// unsigned `bits`-bit integer. Packing is MLX's: row-major 32-bit words, `32 / bits` elements a
/// word, element `k * (32 / bits) + j` of a row in bits `j * bits ..< (j + 1) * bits` of word `k`.
public struct QuantizedMatrix: Sendable {
    /// Output features (rows of the matrix).
    public let rows: Int
    /// Input features (columns); a multiple of `groupSize`.
    public let columns: Int
    /// 4 or 8.
    public let bits: Int
    /// 16, 32, 64 or 128.
    public let groupSize: Int
    /// (rows, columns * bits / 32) packed quantized values.
    public let packed: TensorStorage
    /// (rows, columns / groupSize) Float16 scales.
    public let scales: TensorStorage
    /// (rows, columns / groupSize) Float16 biases.
    public let biases: TensorStorage

    public init(rows: Int, columns: Int, bits: Int, groupSize: Int,
                packed: TensorStorage, scales: TensorStorage, biases: TensorStorage) {
        self.rows = rows
        self.columns = columns
        self.bits = bits
        self.groupSize = groupSize
        self.packed = packed
        self.scales = scales
        self.biases = biases
    }

    /// 32-bit words per row of `packed`.
    public var wordsPerRow: Int { columns * bits / 32 }
    /// Groups per row of `scales` and `biases`.
    public var groupsPerRow: Int { columns / groupSize }

    /// Reference dequantization of one row into `output` (`columns` floats). Slow and obviously right.
    public func dequantizeRow(_ row: Int, into output: UnsafeMutableBufferPointer<Float>) {
        let perWord = 32 / bits
        let mask = UInt32((1 << bits) - 1)
        packed.withWords { words in
            scales.withHalves { scales in
                biases.withHalves { biases in
                    for c in 0..<columns {
                        let word = words[row * wordsPerRow + c / perWord]
                        let q = (word >> UInt32((c % perWord) * bits)) & mask
                        let g = row * groupsPerRow + c / groupSize
                        output[c] = Float(scales[g]) * Float(q) + Float(biases[g])
                    }
                }
            }
        }
    }

    /// The whole matrix as (rows, columns) floats; for tests and small fixtures.
    public func dequantized() -> [Float] {
        var result = [Float](repeating: 0, count: rows * columns)
        result.withUnsafeMutableBufferPointer { all in
            for r in 0..<rows {
                dequantizeRow(r, into: UnsafeMutableBufferPointer(rebasing: all[(r * columns)..<((r + 1) * columns)]))
            }
        }
        return result
    }
}
