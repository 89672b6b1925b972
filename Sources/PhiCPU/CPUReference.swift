import Foundation
import PhiFormats
import PhiModel

/// Scalar reference implementations of every backend operation, over plain arrays: slow and
/// obviously right. The SIMD kernels and the GPU kernels are tested against these.
public enum CPUReference {
    /// (tokens.count, columns): rows `tokens` of the dequantized `table`.
    public static func embed(tokens: [Int32], table: QuantizedMatrix) -> [Float] {
        let all = table.dequantized()
        return tokens.flatMap { all[(Int($0) * table.columns)..<((Int($0) + 1) * table.columns)] }
    }

    /// x (rows, dim) normalised by each row's RMS, times weight (dim).
    public static func rmsNorm(_ x: [Float], weight: [Float], epsilon: Float) -> [Float] {
        let dim = weight.count
        var out = x
        for r in 0..<(x.count / dim) {
            var sum: Float = 0
            for d in 0..<dim { sum += x[r * dim + d] * x[r * dim + d] }
            let inverse = 1 / (sum / Float(dim) + epsilon).squareRoot()
            for d in 0..<dim { out[r * dim + d] = weight[d] * (x[r * dim + d] * inverse) }
        }
        return out
    }

    /// x (tokens, columns) times Wᵀ: (tokens, rows), with W dequantized.
    public static func matmul(_ x: [Float], weight: QuantizedMatrix) -> [Float] {
        let w = weight.dequantized()
        let tokens = x.count / weight.columns
        var out = [Float](repeating: 0, count: tokens * weight.rows)
        for t in 0..<tokens {
            for r in 0..<weight.rows {
                var sum: Float = 0
                for c in 0..<weight.columns { sum += w[r * weight.columns + c] * x[t * weight.columns + c] }
                out[t * weight.rows + r] = sum
            }
        }
        return out
    }

    /// One token's heads (heads, headDimension) rotated rotate-half style at `position`.
    public static func rope(_ x: [Float], heads: Int, headDimension: Int, position: Int,
                            rotary: RotaryEmbedding) -> [Float] {
        var out = x
        let half = rotary.rotaryDimensions / 2
        for h in 0..<heads {
            for i in 0..<half {
                let angle = Float(position) * rotary.inverseFrequencies[i]
                let cos = Foundation.cos(angle) * rotary.attentionScaling
                let sin = Foundation.sin(angle) * rotary.attentionScaling
                let x0 = x[h * headDimension + i], x1 = x[h * headDimension + i + half]
                out[h * headDimension + i] = x0 * cos - x1 * sin
                out[h * headDimension + i + half] = x1 * cos + x0 * sin
            }
        }
        return out
    }

    /// One query (headCount, headDimension) attending to every row of keys and values
    /// (positions, kvHeadCount, headDimension); query head h reads kv head h / (headCount / kvHeadCount).
    public static func attention(query: [Float], keys: [Float], values: [Float], headCount: Int,
                                 kvHeadCount: Int, headDimension: Int) -> [Float] {
        let kvWidth = kvHeadCount * headDimension
        let positions = keys.count / kvWidth
        var out = [Float](repeating: 0, count: headCount * headDimension)
        for h in 0..<headCount {
            let kv = (h / (headCount / kvHeadCount)) * headDimension
            var scores = (0..<positions).map { p -> Float in
                var s: Float = 0
                for d in 0..<headDimension { s += query[h * headDimension + d] * keys[p * kvWidth + kv + d] }
                return s / Float(headDimension).squareRoot()
            }
            let maxScore = scores.max() ?? 0
            scores = scores.map { Foundation.exp($0 - maxScore) }
            let total = scores.reduce(0, +)
            for p in 0..<positions {
                for d in 0..<headDimension {
                    out[h * headDimension + d] += scores[p] / total * values[p * kvWidth + kv + d]
                }
            }
        }
        return out
    }

    /// gateUp (rows, 2 × intermediate) → (rows, intermediate): silu(gate) × up.
    public static func siluGate(_ gateUp: [Float], intermediate: Int) -> [Float] {
        (0..<(gateUp.count / (2 * intermediate) * intermediate)).map { i in
            let (r, j) = (i / intermediate, i % intermediate)
            let g = gateUp[r * 2 * intermediate + j]
            return g / (1 + Foundation.exp(-g)) * gateUp[r * 2 * intermediate + intermediate + j]
        }
    }
}
