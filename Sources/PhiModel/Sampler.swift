import Foundation

/// How the next token is chosen from logits.
public struct SamplingOptions: Sendable, Equatable {
    /// 0 picks the most likely token (greedy); higher flattens the distribution.
    public var temperature: Float = 0.6
    /// Keep only the `topK` most likely tokens; 0 keeps all.
    public var topK: Int = 0
    /// Keep the smallest set of most likely tokens whose probability reaches `topP`; 1 keeps all.
    public var topP: Float = 1
    /// Drop tokens less likely than `minP` × the probability of the most likely one; 0 keeps all.
    public var minP: Float = 0
    /// Divides positive logits (multiplies negative ones) of recently seen tokens; 1 is off.
    public var repetitionPenalty: Float = 1
    /// How many of the latest tokens the repetition penalty looks at.
    public var repetitionWindow: Int = 64
    /// Same seed, same logits: same tokens.
    public var seed: UInt64 = 0

    public init(temperature: Float = 0.6, topK: Int = 0, topP: Float = 1, minP: Float = 0,
                repetitionPenalty: Float = 1, repetitionWindow: Int = 64, seed: UInt64 = 0) {
        self.temperature = temperature
        self.topK = topK
        self.topP = topP
        self.minP = minP
        self.repetitionPenalty = repetitionPenalty
        self.repetitionWindow = repetitionWindow
        self.seed = seed
    }

    /// Greedy decoding.
    public static let greedy = SamplingOptions(temperature: 0)

    /// Whether the choice is the plain argmax of the logits (greedy, no repetition penalty in
    /// effect), which a backend can find without sending the logits back.
    public var isPlainArgmax: Bool {
        temperature <= 0 && (repetitionPenalty == 1 || repetitionWindow <= 0)
    }
}

/// Chooses tokens from logits: repetition penalty, then greedy or temperature with top-k, top-p,
/// min-p. Deterministic for a given seed.
public struct Sampler: Sendable {
    public let options: SamplingOptions
    private var random: SplitMix64

    public init(options: SamplingOptions) {
        self.options = options
        self.random = SplitMix64(seed: options.seed)
    }

    /// The next token for (vocabularySize) `logits`, given the tokens of the sequence so far.
    public mutating func sample(logits: [Float], history: [Int32]) -> Int32 {
        var logits = logits
        applyRepetitionPenalty(to: &logits, history: history)
        if options.temperature <= 0 { return Self.argmax(logits) }

        // Softmax at the temperature, in float64 for stable sums.
        let maxLogit = logits.max() ?? 0
        var candidates = logits.indices.map { (id: $0, p: exp(Double((logits[$0] - maxLogit) / options.temperature))) }
        let needsOrder = options.topK > 0 || options.topP < 1
        if needsOrder {
            candidates.sort { $0.p > $1.p || ($0.p == $1.p && $0.id < $1.id) }
            if options.topK > 0 && options.topK < candidates.count { candidates.removeLast(candidates.count - options.topK) }
            if options.topP < 1 {
                let total = candidates.reduce(0) { $0 + $1.p }
                var cumulative = 0.0
                var keep = candidates.count
                for (i, c) in candidates.enumerated() {
                    cumulative += c.p / total
                    if cumulative >= Double(options.topP) { keep = i + 1; break }
                }
                candidates.removeLast(candidates.count - keep)
            }
        }
        if options.minP > 0 {
            let best = candidates.reduce(0) { max($0, $1.p) }
            candidates.removeAll { $0.p < Double(options.minP) * best }
        }
        let total = candidates.reduce(0) { $0 + $1.p }
        var threshold = random.nextUnitDouble() * total
        for c in candidates {
            threshold -= c.p
            if threshold < 0 { return Int32(c.id) }
        }
        return candidates.last.map { Int32($0.id) } ?? Self.argmax(logits)
    }

    /// The index of the largest logit (the lowest index on ties).
    public static func argmax(_ logits: [Float]) -> Int32 {
        var best = 0
        for i in logits.indices where logits[i] > logits[best] { best = i }
        return Int32(best)
    }

    private func applyRepetitionPenalty(to logits: inout [Float], history: [Int32]) {
        let penalty = options.repetitionPenalty
        guard penalty != 1, options.repetitionWindow > 0 else { return }
        for id in Set(history.suffix(options.repetitionWindow)) where id >= 0 && Int(id) < logits.count {
            let value = logits[Int(id)]
            logits[Int(id)] = value > 0 ? value / penalty : value * penalty
        }
    }
}

/// SplitMix64: a small seeded generator, so that sampling is repeatable across platforms.
struct SplitMix64: Sendable {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 53 random bits.
    mutating func nextUnitDouble() -> Double { Double(next() >> 11) * 0x1p-53 }
}
