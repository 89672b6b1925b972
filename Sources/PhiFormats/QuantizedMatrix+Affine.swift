import Foundation

/// Building and reshaping `QuantizedMatrix` values: quantizing floats, widening to another
/// layout without loss, stacking rows and reordering them (used by every checkpoint converter).
extension QuantizedMatrix {
    /// Layout chosen for checkpoints stored unquantized (F32/F16/BF16): 8-bit affine groups of
    /// 32 (as GGUF Q8_0). Each weight is off by at most half a step, (max − min) / 510 of its
    /// group, plus the Float16 rounding of scale and bias: about 0.2 % of the group's range.
    public static let unquantizedBits = 8
    public static let unquantizedGroupSize = 32

    /// Quantizes (rows, columns) row-major `values` to `bits`-bit affine groups: per group,
    /// bias = min, scale = (max − min) / (2^bits − 1), q = round((w − bias) / scale).
    /// Throws `FormatError` (naming `tensor` of `file`) for non-finite values or a bad shape.
    public static func quantizing(_ values: [Float], rows: Int, columns: Int,
                                  bits: Int = unquantizedBits, groupSize: Int = unquantizedGroupSize,
                                  tensor: String, file: URL) throws -> QuantizedMatrix {
        guard values.count == rows * columns else {
            throw FormatError(file: file, tensor: tensor, "has \(values.count) values, expected \(rows) × \(columns)")
        }
        var group = groupSize
        while columns % group != 0 && group > 16 { group /= 2 }
        guard columns % group == 0, bits == 4 || bits == 8 else {
            throw FormatError(file: file, tensor: tensor, "has \(columns) columns, not a multiple of 16; phi-gpu cannot lay it out in affine groups")
        }
        let levels = Float((1 << bits) - 1)
        let perWord = 32 / bits
        let groupsPerRow = columns / group
        var packed = [UInt32](repeating: 0, count: rows * columns / perWord)  // (rows, columns * bits / 32)
        var scales = [Float16](repeating: 0, count: rows * groupsPerRow)       // (rows, columns / group)
        var biases = [Float16](repeating: 0, count: rows * groupsPerRow)       // (rows, columns / group)
        for r in 0..<rows {
            for g in 0..<groupsPerRow {
                let start = r * columns + g * group
                var low = Float.infinity, high = -Float.infinity
                for c in start..<(start + group) {
                    let v = values[c]
                    guard v.isFinite else {
                        throw FormatError(file: file, tensor: tensor, "holds a non-finite value (\(v)) at row \(r); the checkpoint is corrupt")
                    }
                    low = min(low, v); high = max(high, v)
                }
                let bias = Float16(low)
                var scale = Float16((high - low) / levels)
                guard bias.isFinite, scale.isFinite else {
                    throw FormatError(file: file, tensor: tensor, "has values beyond Float16's range (±65504) at row \(r)")
                }
                if scale == 0 { scale = Float16.leastNonzeroMagnitude }
                scales[r * groupsPerRow + g] = scale
                biases[r * groupsPerRow + g] = bias
                for c in 0..<group {
                    let q = ((values[start + c] - Float(bias)) / Float(scale)).rounded()
                    let clamped = UInt32(min(max(q, 0), levels))
                    let index = g * group + c
                    packed[r * columns / perWord + index / perWord] |= clamped << UInt32((index % perWord) * bits)
                }
            }
        }
        return QuantizedMatrix(rows: rows, columns: columns, bits: bits, groupSize: group,
                               packed: TensorStorage(copying: packed), scales: TensorStorage(copying: scales),
                               biases: TensorStorage(copying: biases))
    }

    /// The same matrix in a layout with at least as many bits and a group size dividing this
    /// one's: exact (q values are unchanged; each group's scale and bias are repeated).
    public func widened(bits newBits: Int, groupSize newGroup: Int) -> QuantizedMatrix {
        precondition(newBits >= bits && groupSize % newGroup == 0, "widening must not lose information")
        if newBits == bits && newGroup == groupSize { return self }
        let oldPerWord = 32 / bits, newPerWord = 32 / newBits
        let repeatCount = groupSize / newGroup
        let newGroupsPerRow = columns / newGroup
        let mask = UInt32((1 << bits) - 1)
        var newPacked = [UInt32](repeating: 0, count: rows * columns / newPerWord)  // (rows, columns * newBits / 32)
        var newScales = [Float16](repeating: 0, count: rows * newGroupsPerRow)       // (rows, columns / newGroup)
        var newBiases = [Float16](repeating: 0, count: rows * newGroupsPerRow)       // (rows, columns / newGroup)
        packed.withWords { words in
            scales.withHalves { oldScales in
                biases.withHalves { oldBiases in
                    for r in 0..<rows {
                        for c in 0..<columns {
                            let q = (words[r * wordsPerRow + c / oldPerWord] >> UInt32((c % oldPerWord) * bits)) & mask
                            newPacked[r * columns / newPerWord + c / newPerWord] |= q << UInt32((c % newPerWord) * newBits)
                        }
                        for g in 0..<newGroupsPerRow {
                            newScales[r * newGroupsPerRow + g] = oldScales[r * groupsPerRow + g / repeatCount]
                            newBiases[r * newGroupsPerRow + g] = oldBiases[r * groupsPerRow + g / repeatCount]
                        }
                    }
                }
            }
        }
        return QuantizedMatrix(rows: rows, columns: columns, bits: newBits, groupSize: newGroup,
                               packed: TensorStorage(copying: newPacked), scales: TensorStorage(copying: newScales),
                               biases: TensorStorage(copying: newBiases))
    }

    /// The rows of `parts` stacked in order (e.g. q | k | v), first widened to a common layout
    /// (most bits, smallest group) so that nothing is lost. All parts need the same column count.
    public static func stackingRows(_ parts: [QuantizedMatrix], name: String, file: URL) throws -> QuantizedMatrix {
        guard let first = parts.first else { throw FormatError(file: file, tensor: name, "nothing to stack") }
        for part in parts where part.columns != first.columns {
            throw FormatError(file: file, tensor: name, "parts have \(first.columns) and \(part.columns) columns; they must match to be fused")
        }
        let bits = parts.map(\.bits).max() ?? first.bits
        let group = parts.map(\.groupSize).min() ?? first.groupSize
        guard parts.allSatisfy({ $0.groupSize % group == 0 }) else {
            throw FormatError(file: file, tensor: name, "parts have group sizes \(parts.map(\.groupSize)) that do not divide one another")
        }
        let widened = parts.map { $0.widened(bits: bits, groupSize: group) }
        if widened.count == 1 { return widened[0] }
        return QuantizedMatrix(rows: widened.reduce(0) { $0 + $1.rows }, columns: first.columns, bits: bits, groupSize: group,
                               packed: concatenate(widened.map(\.packed)), scales: concatenate(widened.map(\.scales)),
                               biases: concatenate(widened.map(\.biases)))
    }

    /// The matrix with its rows reordered: row `i` of the result is row `order[i]` of this one.
    public func reorderingRows(_ order: [Int]) -> QuantizedMatrix {
        precondition(order.count == rows && order.allSatisfy { $0 >= 0 && $0 < rows }, "row order must be a permutation")
        func gather(_ storage: TensorStorage) -> TensorStorage {
            let rowBytes = storage.byteCount / rows
            let box = OwnedBytes(byteCount: storage.byteCount)
            withExtendedLifetime(storage.owner) {
                for (i, source) in order.enumerated() {
                    box.pointer.advanced(by: i * rowBytes)
                        .copyMemory(from: storage.bytes.baseAddress!.advanced(by: source * rowBytes), byteCount: rowBytes)
                }
            }
            return TensorStorage(owner: box, bytes: UnsafeRawBufferPointer(start: box.pointer, count: box.byteCount))
        }
        return QuantizedMatrix(rows: rows, columns: columns, bits: bits, groupSize: groupSize,
                               packed: gather(packed), scales: gather(scales), biases: gather(biases))
    }
}

/// The bytes of `parts` one after another, in a new allocation.
func concatenate(_ parts: [TensorStorage]) -> TensorStorage {
    let box = OwnedBytes(byteCount: parts.reduce(0) { $0 + $1.byteCount })
    var offset = 0
    for part in parts {
        withExtendedLifetime(part.owner) {
            if let base = part.bytes.baseAddress { box.pointer.advanced(by: offset).copyMemory(from: base, byteCount: part.byteCount) }
        }
        offset += part.byteCount
    }
    return TensorStorage(owner: box, bytes: UnsafeRawBufferPointer(start: box.pointer, count: box.byteCount))
}
