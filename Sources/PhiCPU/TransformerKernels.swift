import Foundation
import PhiModel

/// The CPU kernels other than quantized products: norm, RoPE, attention, gated activation.
enum TransformerKernels {
    /// out[i, :] = x[i, :] / sqrt(mean(x[i, :]²) + eps) × weight for rows 0..<count; rows of `dim`.
    static func rmsNorm(_ x: UnsafePointer<Float>, weight: UnsafePointer<Float>, epsilon: Float, dim: Int,
                        count: Int, out: UnsafeMutablePointer<Float>) {
        for i in 0..<count {
            let row = x + i * dim
            let inverse = 1 / (VectorMath.sumOfSquares(row, count: dim) / Float(dim) + epsilon).squareRoot()
            let target = out + i * dim
            for d in 0..<dim { target[d] = weight[d] * (row[d] * inverse) }
        }
    }

    /// Rotates `heads` heads of `headDimension` at `vector` in place (rotate-half on the first
    /// `cos.count × 2` dimensions, the rest untouched). cos, sin: (rotaryDimensions / 2), pre-scaled.
    @inline(__always)
    static func rotate(_ vector: UnsafeMutablePointer<Float>, heads: Int, headDimension: Int,
                       cos: UnsafePointer<Float>, sin: UnsafePointer<Float>, half: Int) {
        for h in 0..<heads {
            let head = vector + h * headDimension
            for i in 0..<half {
                let x0 = head[i], x1 = head[i + half]
                head[i] = x0 * cos[i] - x1 * sin[i]
                head[i + half] = x1 * cos[i] + x0 * sin[i]
            }
        }
    }

    /// Causal attention of one query row at `position` over cached positions 0...position.
    /// query, out: (headCount, headDimension); keys, values: (positions, kvHeads, headDimension).
    /// `scores` has room for position + 1 floats. Heads `heads` only.
    static func attendOne(query: UnsafePointer<Float>, position: Int, keys: UnsafePointer<Float>,
                          values: UnsafePointer<Float>, headCount: Int, kvHeadCount: Int, headDimension: Int,
                          heads: Range<Int>, scores: UnsafeMutablePointer<Float>, out: UnsafeMutablePointer<Float>) {
        let kvWidth = kvHeadCount * headDimension
        let groupSize = headCount / kvHeadCount
        let scale = 1 / Float(headDimension).squareRoot()
        for h in heads {
            let q = query + h * headDimension
            let kvOffset = (h / groupSize) * headDimension
            var maxScore = -Float.infinity
            for p in 0...position {
                let score = VectorMath.dot(q, keys + p * kvWidth + kvOffset, count: headDimension) * scale
                scores[p] = score
                maxScore = max(maxScore, score)
            }
            var total: Float = 0
            for p in 0...position {
                let e = Foundation.exp(scores[p] - maxScore)
                scores[p] = e
                total += e
            }
            let target = out + h * headDimension
            target.update(repeating: 0, count: headDimension)
            let inverse = 1 / total
            for p in 0...position {
                VectorMath.addScaled(values + p * kvWidth + kvOffset, scores[p] * inverse, into: target,
                                     count: headDimension)
            }
        }
    }

    /// out[i, j] = silu(gate[i, j]) × up[i, j] for the flat indices i × intermediate + j in
    /// `elements`, with gateUp rows gate | up of `intermediate` each and out rows of `intermediate`.
    static func siluGate(_ gateUp: UnsafePointer<Float>, intermediate: Int, elements: Range<Int>,
                         out: UnsafeMutablePointer<Float>) {
        var e = elements.lowerBound
        while e < elements.upperBound {
            let (i, first) = (e / intermediate, e % intermediate)
            let last = min(intermediate, first + elements.upperBound - e)
            let gate = gateUp + i * 2 * intermediate
            let up = gate + intermediate
            let target = out + i * intermediate
            for j in first..<last {
                let g = gate[j]
                target[j] = g / (1 + Foundation.exp(-g)) * up[j]
            }
            e += last - first
        }
    }
}
