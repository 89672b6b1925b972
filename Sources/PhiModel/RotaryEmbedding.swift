import Foundation

/// The RoPE frequencies of a model at a given context window (rotate-half style, as transformers).
///
/// Dimension pair `(i, i + rotaryDimensions / 2)` of each head is rotated by the angle
/// `position × inverseFrequencies[i]`; cos and sin are multiplied by `attentionScaling`.
/// With LongRoPE the short factors are used while the context window is at most the original
/// context, the long factors beyond it, and the scaling is `sqrt(1 + ln(max/orig) / ln(orig))`.
public struct RotaryEmbedding: Sendable, Equatable {
    /// Leading dimensions of each head that are rotated; the rest pass through.
    public var rotaryDimensions: Int
    /// (rotaryDimensions / 2) Float32.
    public var inverseFrequencies: [Float]
    /// Factor on cos and sin (1 without LongRoPE).
    public var attentionScaling: Float

    public init(rotaryDimensions: Int, inverseFrequencies: [Float], attentionScaling: Float) {
        self.rotaryDimensions = rotaryDimensions
        self.inverseFrequencies = inverseFrequencies
        self.attentionScaling = attentionScaling
    }

    /// The frequencies `config` uses with a context window of `contextLength` tokens.
    public init(config: ModelConfig, contextLength: Int) {
        let dims = config.rotaryDimensions
        let half = dims / 2
        var factors = [Float](repeating: 1, count: half)
        var scaling: Float = 1
        if let longRoPE = config.longRoPE {
            let useLong = contextLength > longRoPE.originalContext
            let chosen = useLong ? longRoPE.longFactor : longRoPE.shortFactor
            for i in 0..<min(half, chosen.count) { factors[i] = chosen[i] }
            let ratio = Double(config.maxContext) / Double(longRoPE.originalContext)
            if ratio > 1 {
                scaling = Float((1 + log(ratio) / log(Double(longRoPE.originalContext))).squareRoot())
            }
        }
        // transformers: 1 / (factor × base ** (arange(0, dim, 2).float() / dim)), all in float32.
        let frequencies = (0..<half).map { i -> Float in
            let exponent = Float(2 * i) / Float(dims)
            return 1 / (factors[i] * Float(pow(Double(config.ropeTheta), Double(exponent))))
        }
        self.init(rotaryDimensions: dims, inverseFrequencies: frequencies, attentionScaling: scaling)
    }

    /// cos and sin, already scaled, of every rotated pair at `position`: two (rotaryDimensions / 2) arrays.
    public func cosSin(position: Int) -> (cos: [Float], sin: [Float]) {
        var cosines = [Float](repeating: 0, count: inverseFrequencies.count)
        var sines = cosines
        for i in 0..<inverseFrequencies.count {
            let angle = Float(position) * inverseFrequencies[i]
            cosines[i] = Foundation.cos(angle) * attentionScaling
            sines[i] = Foundation.sin(angle) * attentionScaling
        }
        return (cosines, sines)
    }
}
