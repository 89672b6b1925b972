import Foundation
import PhiCPU
import PhiFormats
import PhiModel

/// `phi-gpu bench kernels`: each product of a model's layer at its real shapes on one backend,
/// checked against the CPU reference first, then timed.
public enum KernelBenchmark {
    /// One measured operation.
    public struct Row: Sendable, Codable {
        public var name: String
        /// "rows x columns" of the weight.
        public var shape: String
        public var tokens: Int
        public var microsecondsPerCall: Double
        /// Weight, input and output bytes moved per call, per second.
        public var gigabytesPerSecond: Double
        /// Of the streaming-read bandwidth measured in the same run, when known.
        public var percentOfBandwidth: Double?
        public var teraflops: Double
        /// Largest difference from the CPU reference, relative to the output's largest magnitude.
        public var relativeError: Double
    }

    /// The products of a layer and the LM head, for `tokens` tokens (1 = decode), and for prompts
    /// (more than 1 token) the attention after qkv. Timed calls of products cycle
    /// through the products of `layers` layers, so the weights are read from memory, not from a
    /// cache that would hold one layer's matrix (50 MB of L2 on an H100).
    public static func run(config: ModelConfig, backend: any InferenceBackend, tokensList: [Int] = [1, 512],
                           bandwidth: Double?, layers: Int = 4,
                           iterations: (Int) -> Int = { $0 == 1 ? 200 : 10 }) throws -> [Row] {
        var oneLayer = config
        oneLayer.layerCount = layers
        let weights = RandomWeights.make(config: oneLayer, seed: 42)
        let maxTokens = tokensList.max() ?? 1
        try backend.prepare(weights: weights, contextLength: maxTokens + 1,
                            rotary: RotaryEmbedding(config: oneLayer, contextLength: maxTokens + 1))
        let hidden = try backend.makeTensor(rows: maxTokens, columns: config.hiddenSize)
        let normed = try backend.makeTensor(rows: maxTokens, columns: config.hiddenSize)
        let gateUp = try backend.makeTensor(rows: maxTokens, columns: 2 * config.intermediateSize)
        let gated = try backend.makeTensor(rows: maxTokens, columns: config.intermediateSize)
        let attentionInput = try backend.makeTensor(rows: maxTokens, columns: config.headCount * config.headDimension)
        let projected = try backend.makeTensor(rows: maxTokens, columns: config.hiddenSize)
        var outputs: [Int: BackendTensor] = [:]  // by width: (maxTokens, rows of the product)
        func output(width: Int) throws -> BackendTensor {
            if let made = outputs[width] { return made }
            let made = try backend.makeTensor(rows: maxTokens, columns: width)
            outputs[width] = made
            return made
        }

        // Realistic activations: embedded tokens, normalised, through gate·up and SiLU.
        let ids = (0..<maxTokens).map { Int32(($0 * 7919 + 13) % config.vocabularySize) }
        try backend.embed(tokens: ids, into: hidden)
        try backend.rmsNorm(hidden, weight: .attentionNorm(layer: 0), count: maxTokens, into: normed)
        try backend.matmul(normed, rows: 0..<maxTokens, weight: .gateUp(layer: 0), into: gateUp)
        try backend.siluGate(gateUp, count: maxTokens, into: gated)
        // The attention output's input: the down product of those activations, normalised.
        try backend.matmul(gated, rows: 0..<maxTokens, weight: .down(layer: 0), into: projected)
        if attentionInput.columns == config.hiddenSize {
            try backend.rmsNorm(projected, weight: .mlpNorm(layer: 0), count: maxTokens, into: attentionInput)
        }

        let products: [(String, (Int) -> WeightName, BackendTensor)] = [
            ("qkv", { .qkv(layer: $0 % layers) }, normed),
            ("attention output", { .attentionOutput(layer: $0 % layers) }, attentionInput),
            ("gate·up", { .gateUp(layer: $0 % layers) }, normed), ("down", { .down(layer: $0 % layers) }, gated),
            ("lm head", { _ in .lmHead }, normed),
        ]
        var rows: [Row] = []
        let queries = try backend.makeTensor(rows: maxTokens, columns: config.headCount * config.headDimension)
        let attended = try backend.makeTensor(rows: maxTokens, columns: config.headCount * config.headDimension)
        for tokens in tokensList {
            for (name, weightOf, input) in products {
                let weight = weightOf(0)
                guard let matrix = weights.matrix(weight) else { continue }
                guard input.columns == matrix.columns else { continue }
                let output = try output(width: matrix.rows)
                // Check first: the backend's output against the CPU reference on the same input.
                try backend.matmul(input, rows: 0..<tokens, weight: weight, into: output)
                let got = try backend.read(output, rows: 0..<1)
                let x = try backend.read(input, rows: 0..<1)
                let expected = CPUReference.matmul(x, weight: matrix)
                let scale = Double(expected.map(abs).max() ?? 1)
                let error = zip(got.prefix(matrix.rows), expected).map { Double(abs($0 - $1)) }.max() ?? 0
                let relativeError = error / max(scale, 1e-30)
                guard relativeError < 1e-3 else {
                    throw BackendError.unsupportedWeight(name: name, reason: "\(backend.name) differs from the CPU reference by \(relativeError) (relative); not timing it")
                }
                let count = iterations(tokens)
                let seconds = try secondsPerCall(backend: backend, calls: count, reading: output) { call in
                    try backend.matmul(input, rows: 0..<tokens, weight: weightOf(call), into: output)
                }
                let weightBytes = matrix.packed.byteCount + matrix.scales.byteCount + matrix.biases.byteCount
                let bytes = Double(weightBytes + 4 * tokens * (matrix.columns + matrix.rows))
                let gigabytesPerSecond = bytes / seconds / 1e9
                rows.append(Row(name: name, shape: "\(matrix.rows)x\(matrix.columns)", tokens: tokens,
                                microsecondsPerCall: seconds * 1e6, gigabytesPerSecond: gigabytesPerSecond,
                                percentOfBandwidth: bandwidth.map { 100 * gigabytesPerSecond * 1e9 / $0 },
                                teraflops: 2 * Double(matrix.rows * matrix.columns * tokens) / seconds / 1e12,
                                relativeError: relativeError))
                if name == "qkv", tokens > 1 { // a prompt's attention, over the rows qkv just wrote
                    rows.append(try promptAttention(config: config, backend: backend, tokens: tokens, qkv: output, queries: queries,
                                                    into: attended, rotary: RotaryEmbedding(config: oneLayer, contextLength: maxTokens + 1),
                                                    iterations: count))
                }
            }
        }
        return rows
    }

    /// Tolerance of the prompt attention against the CPU, relative to the output's largest
    /// magnitude: the cooperative kernel rounds the queries and probabilities to Float16, and the
    /// cache holds keys and values in Float16 (the GPU tests use the same).
    public static let attentionTolerance = 3e-3

    /// The attention of a prompt of `tokens` tokens from position 0 over layer 0's cache: `qkv`
    /// (tokens, qkvRows) rotated and cached, then attended; checked on a sample of queries
    /// against the CPU reference, then timed (the attention alone).
    static func promptAttention(config: ModelConfig, backend: any InferenceBackend, tokens: Int, qkv: BackendTensor,
                                queries: BackendTensor, into out: BackendTensor, rotary: RotaryEmbedding,
                                iterations: Int) throws -> Row {
        let (heads, kvHeads, dimension) = (config.headCount, config.kvHeadCount, config.headDimension)
        let width = heads * dimension, kvWidth = kvHeads * dimension
        try backend.rotateAndCache(qkv: qkv, layer: 0, startPosition: 0, count: tokens, queries: queries)
        try backend.attention(queries: queries, layer: 0, startPosition: 0, count: tokens, into: out)
        let got = try backend.read(out, rows: 0..<tokens)
        let values = try backend.read(qkv, rows: 0..<tokens) // (tokens, qkvRows): q, k, v
        let rowWidth = values.count / tokens
        var keys: [Float] = [], cached: [Float] = [] // (tokens, kvHeads, headDim): rotated keys, values
        for t in 0..<tokens {
            let row = values[(t * rowWidth)..<((t + 1) * rowWidth)]
            keys += CPUReference.rope(Array(row.dropFirst(width).prefix(kvWidth)), heads: kvHeads, headDimension: dimension,
                                      position: t, rotary: rotary)
            cached += row.dropFirst(width + kvWidth).prefix(kvWidth)
        }
        // Every 37th query, and the last three (the edge of the last tile).
        let sample = Array(Set(Array(stride(from: 0, to: tokens, by: 37)) + Array(max(0, tokens - 3)..<tokens))).sorted()
        var error = 0.0, scale = 0.0
        for t in sample {
            let row = values[(t * rowWidth)..<((t + 1) * rowWidth)]
            let query = CPUReference.rope(Array(row.prefix(width)), heads: heads, headDimension: dimension, position: t, rotary: rotary)
            let expected = CPUReference.attention(query: query, keys: Array(keys.prefix((t + 1) * kvWidth)),
                                                  values: Array(cached.prefix((t + 1) * kvWidth)),
                                                  headCount: heads, kvHeadCount: kvHeads, headDimension: dimension)
            scale = max(scale, Double(expected.map(abs).max() ?? 0))
            error = max(error, zip(got[(t * width)..<((t + 1) * width)], expected).map { Double(abs($0 - $1)) }.max() ?? 0)
        }
        let relativeError = error / max(scale, 1e-30)
        guard relativeError < attentionTolerance else {
            throw BackendError.unsupportedWeight(name: "attention", reason:
                "\(backend.name) differs from the CPU reference by \(relativeError) (relative) at \(tokens) tokens; not timing it")
        }
        let seconds = try secondsPerCall(backend: backend, calls: iterations, reading: out) { _ in
            try backend.attention(queries: queries, layer: 0, startPosition: 0, count: tokens, into: out)
        }
        // The cached keys and values once (Float16), the queries in and the outputs out (Float32).
        let pairs = Double(tokens * (tokens + 1) / 2)
        let bytes = Double(2 * 2 * tokens * kvWidth + 2 * 4 * tokens * width)
        return Row(name: "attention", shape: "\(heads)x\(dimension)", tokens: tokens, microsecondsPerCall: seconds * 1e6,
                   gigabytesPerSecond: bytes / seconds / 1e9, percentOfBandwidth: nil,
                   teraflops: 4 * Double(heads * dimension) * pairs / seconds / 1e12, relativeError: relativeError)
    }

    /// Seconds per call of `call` (given the call's index), run `calls` times, then `reading` read
    /// back. A backend that times its kernels gives the device time of the calls alone (all the
    /// dispatches of a call: the cooperative prefill product's conversion of x too), after the
    /// calls have run untimed for `warmUpSeconds`: a GPU idle while the host checked the results
    /// runs at a fraction of its clock until it has been busy for a while (an H200 at 345 MHz
    /// instead of 1,980 for a 512-token product timed straight after its check).
    static func secondsPerCall(backend: any InferenceBackend, calls: Int, reading: BackendTensor,
                               warmUpSeconds: Double = 0.25, _ call: (Int) throws -> Void) throws -> Double {
        let clock = ContinuousClock()
        let profiler = backend as? any ProfilingBackend
        if profiler != nil {
            let warm = clock.now + .milliseconds(Int(warmUpSeconds * 1000))
            repeat {
                for index in 0..<calls { try call(index) }
                _ = try backend.read(reading, rows: 0..<1)
            } while clock.now < warm
        }
        profiler?.profiling = true
        let start = clock.now
        for index in 0..<calls {
            try call(index)
        }
        _ = try backend.read(reading, rows: 0..<1)
        let seconds = Generator.seconds(clock.now - start) / Double(calls)
        guard let profiler else { return seconds }
        profiler.profiling = false
        let kernels = profiler.lastProfile.filter { $0.name != "copy" }
        return kernels.reduce(0) { $0 + $1.seconds } / Double(calls)
    }
}
