import Foundation
import PhiFormats
import PhiModel

/// `phi-gpu bench model`: prompt processing and generation speed like llama-bench — repeated runs,
/// mean ± standard deviation, optionally after filling the KV cache to a depth first.
public enum ModelBenchmark {
    /// Models whose shapes `--random` synthesizes.
    public static let presets: [(name: String, config: ModelConfig)] = [
        ("phi-3.5-mini", RandomWeights.phi35MiniConfig), ("phi-4-mini", RandomWeights.phi4MiniConfig),
    ]

    /// One test's speeds over the repetitions.
    public struct Measurement: Sendable, Codable {
        /// `pp512`, `tg128`, with ` @ d1024` when run at a depth.
        public var test: String
        /// "prompt" (one batch of `tokens`) or "generation" (`tokens` single-token steps).
        public var kind: String
        public var tokens: Int
        /// Tokens already in the KV cache when timing starts.
        public var depth: Int
        /// Tokens per second of each repetition.
        public var samples: [Double]
        /// With `profile`: GPU time per kernel of one more prompt pass or decode step.
        public var kernels: [KernelTime]?
        /// With `profile`: the wall-clock seconds of that profiled pass or step.
        public var profiledStepSeconds: Double?
        /// With `profile`: wall-clock seconds of one more pass or step, not profiled, and the
        /// host's share of it spent queueing the step's commands.
        public var stepSeconds: Double?
        public var queueSeconds: Double?
        public var mean: Double { samples.reduce(0, +) / Double(max(samples.count, 1)) }
        /// Sample standard deviation (0 for one repetition).
        public var standardDeviation: Double {
            guard samples.count > 1 else { return 0 }
            let m = mean
            return (samples.reduce(0) { $0 + ($1 - m) * ($1 - m) } / Double(samples.count - 1)).squareRoot()
        }
    }

    /// Times a `promptTokens` prefill and `generationTokens` decode steps (either may be 0), each
    /// `repetitions` times from a cache filled with `depth` tokens (untimed). One untimed warm-up
    /// token (and prompt) comes first. `progress` hears "pp512 2/5"-style steps. With `profile`, a backend that
    /// can time its kernels times one more prompt pass and decode step kernel by kernel.
    public static func run(weights: ModelWeights, backend: any InferenceBackend, promptTokens: Int,
                           generationTokens: Int, depth: Int = 0, repetitions: Int = 5, profile: Bool = false,
                           progress: (String) -> Void = { _ in }) throws -> [Measurement] {
        let vocabulary = weights.config.vocabularySize
        let batch = min(max(promptTokens, 1), max(512, backend.preferredBatch))  // prompts in one batch, as in chat, up to 512 on a CPU
        let pass = try ForwardPass(weights: weights, backend: backend,
                                   contextLength: depth + max(promptTokens, generationTokens) + (profile ? 3 : 1), maxBatch: batch)
        let ids = { (count: Int, salt: Int) in (0..<count).map { Int32((($0 + salt) * 7919 + 13) % vocabulary) } }
        _ = try pass.forward(tokens: [1], logits: .last)  // warm-up: touches every weight once
        if promptTokens > 1 {  // and builds the prompt kernels' pipelines
            pass.reset()
            _ = try pass.forward(tokens: ids(promptTokens, 0), logits: .last)
        }
        let clock = ContinuousClock()
        let suffix = depth > 0 ? " @ d\(depth)" : ""
        // Runs `step` once unprofiled (wall and queueing time) and once with every kernel timed;
        // the last submission of the profiled run is what `kernels` holds.
        func profileStep(_ measurement: inout Measurement, _ step: (Int32) throws -> Void) throws {
            guard let profiler = backend as? any ProfilingBackend else { return }
            let unprofiled = clock.now
            try step(1)
            measurement.stepSeconds = Generator.seconds(clock.now - unprofiled)
            measurement.queueSeconds = profiler.lastQueueSeconds
            profiler.profiling = true
            defer { profiler.profiling = false }
            let start = clock.now
            try step(2)
            measurement.profiledStepSeconds = Generator.seconds(clock.now - start)
            measurement.kernels = profiler.lastProfile
        }
        var results: [Measurement] = []
        if promptTokens > 0 {
            var measurement = Measurement(test: "pp\(promptTokens)\(suffix)", kind: "prompt", tokens: promptTokens,
                                          depth: depth, samples: [])
            for repetition in 0..<repetitions {
                progress("\(measurement.test) \(repetition + 1)/\(repetitions)")
                pass.reset()
                if depth > 0 { _ = try pass.forward(tokens: ids(depth, 1), logits: .last) }
                let start = clock.now
                _ = try pass.forward(tokens: ids(promptTokens, 2), logits: .last)
                measurement.samples.append(Double(promptTokens) / Generator.seconds(clock.now - start))
            }
            if profile {
                try profileStep(&measurement) { salt in
                    pass.reset()
                    if depth > 0 { _ = try pass.forward(tokens: ids(depth, 1), logits: .last) }
                    _ = try pass.forward(tokens: ids(promptTokens, 2 + Int(salt)), logits: .last)
                }
            }
            results.append(measurement)
        }
        if generationTokens > 0 {
            var measurement = Measurement(test: "tg\(generationTokens)\(suffix)", kind: "generation",
                                          tokens: generationTokens, depth: depth, samples: [])
            for repetition in 0..<repetitions {
                progress("\(measurement.test) \(repetition + 1)/\(repetitions)")
                pass.reset()
                var token: Int32 = 1
                if depth > 0 { token = try pass.greedyNext(tokens: ids(depth, 1)) }
                let start = clock.now
                for _ in 0..<generationTokens {
                    token = try pass.greedyNext(tokens: [token])  // greedy, as `generate --temperature 0` decodes
                }
                measurement.samples.append(Double(generationTokens) / Generator.seconds(clock.now - start))
            }
            if profile { try profileStep(&measurement) { _ = try pass.forward(tokens: [$0], logits: .last) } }
            results.append(measurement)
        }
        return results
    }

    /// Bytes of all weights: packed values, scales, biases and norms (a tied head counted once).
    public static func weightBytes(_ weights: ModelWeights) -> Int {
        func bytes(_ m: QuantizedMatrix) -> Int { m.packed.byteCount + m.scales.byteCount + m.biases.byteCount }
        var total = bytes(weights.embedding) + weights.finalNorm.byteCount
        if !weights.config.tiedEmbeddings { total += bytes(weights.lmHead) }
        for layer in weights.layers {
            total += bytes(layer.qkv) + bytes(layer.output) + bytes(layer.gateUp) + bytes(layer.down)
                + layer.attentionNorm.byteCount + layer.mlpNorm.byteCount
        }
        return total
    }
}
