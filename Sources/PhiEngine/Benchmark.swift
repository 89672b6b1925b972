import PhiModel

/// Prompt and decode speed of a backend on given weights (random ones of real shapes for `phi-gpu bench`).
public enum Benchmark {
    /// Measured speeds.
    public struct Result: Sendable, CustomStringConvertible {
        public var backend: String
        public var promptTokens: Int
        public var promptSeconds: Double
        public var decodeTokens: Int
        public var decodeSeconds: Double
        public var promptTokensPerSecond: Double { Double(promptTokens) / promptSeconds }
        public var decodeTokensPerSecond: Double { Double(decodeTokens) / decodeSeconds }

        public var description: String {
            let prompt = (promptTokensPerSecond * 100).rounded() / 100
            let decode = (decodeTokensPerSecond * 100).rounded() / 100
            return "\(backend): prompt \(promptTokens) tokens \(prompt) tok/s, decode \(decodeTokens) tokens \(decode) tok/s"
        }
    }

    /// Processes a `promptTokens`-token prompt as one prefill, then decodes `decodeTokens` tokens one
    /// at a time (greedy), after one untimed warm-up token. Token ids are fixed pseudo-random ids.
    public static func run(weights: ModelWeights, backend: any InferenceBackend, promptTokens: Int = 64,
                           decodeTokens: Int = 16) throws -> Result {
        let vocabulary = weights.config.vocabularySize
        let pass = try ForwardPass(weights: weights, backend: backend, contextLength: promptTokens + decodeTokens + 2,
                                   maxBatch: max(promptTokens, 1))
        _ = try pass.forward(tokens: [1], logits: .last)  // warm-up: touch every weight page once
        pass.reset()
        let prompt = (0..<promptTokens).map { Int32(($0 * 7919 + 13) % vocabulary) }
        let clock = ContinuousClock()
        let promptStart = clock.now
        var token: Int32 = prompt.isEmpty ? 0 : try pass.greedyNext(tokens: prompt)
        let promptSeconds = Generator.seconds(clock.now - promptStart)
        let decodeStart = clock.now
        for _ in 0..<decodeTokens {
            token = try pass.greedyNext(tokens: [token])
        }
        return Result(backend: backend.name, promptTokens: promptTokens, promptSeconds: promptSeconds,
                      decodeTokens: decodeTokens, decodeSeconds: Generator.seconds(clock.now - decodeStart))
    }
}
