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

    /// The products of one layer and the LM head, for `tokens` tokens (1 = decode).
    public static func run(config: ModelConfig, backend: any InferenceBackend, tokensList: [Int] = [1, 512],
                           bandwidth: Double?, iterations: (Int) -> Int = { $0 == 1 ? 200 : 10 }) throws -> [Row] {
        var oneLayer = config
        oneLayer.layerCount = 1
        let weights = RandomWeights.make(config: oneLayer, seed: 42)
        let maxTokens = tokensList.max() ?? 1
        try backend.prepare(weights: weights, contextLength: maxTokens + 1,
                            rotary: RotaryEmbedding(config: oneLayer, contextLength: maxTokens + 1))
        let hidden = try backend.makeTensor(rows: maxTokens, columns: config.hiddenSize)
        let normed = try backend.makeTensor(rows: maxTokens, columns: config.hiddenSize)
        let gateUp = try backend.makeTensor(rows: maxTokens, columns: 2 * config.intermediateSize)
        let gated = try backend.makeTensor(rows: maxTokens, columns: config.intermediateSize)
        let attentionInput = try backend.makeTensor(rows: maxTokens, columns: config.headCount * config.headDimension)
        let output = try backend.makeTensor(rows: maxTokens, columns: max(config.qkvRows, 2 * config.intermediateSize, config.vocabularySize))

        // Realistic activations: embedded tokens, normalised, through gate·up and SiLU.
        let ids = (0..<maxTokens).map { Int32(($0 * 7919 + 13) % config.vocabularySize) }
        try backend.embed(tokens: ids, into: hidden)
        try backend.rmsNorm(hidden, weight: .attentionNorm(layer: 0), count: maxTokens, into: normed)
        try backend.matmul(normed, rows: 0..<maxTokens, weight: .gateUp(layer: 0), into: gateUp)
        try backend.siluGate(gateUp, count: maxTokens, into: gated)
        try backend.matmul(normed, rows: 0..<maxTokens, weight: .attentionOutput(layer: 0), into: attentionInput)

        let products: [(String, WeightName, BackendTensor)] = [
            ("qkv", .qkv(layer: 0), normed), ("attention output", .attentionOutput(layer: 0), attentionInput),
            ("gate·up", .gateUp(layer: 0), normed), ("down", .down(layer: 0), gated), ("lm head", .lmHead, normed),
        ]
        var rows: [Row] = []
        for tokens in tokensList {
            for (name, weight, input) in products {
                guard let matrix = weights.matrix(weight) else { continue }
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
                let clock = ContinuousClock()
                let start = clock.now
                for _ in 0..<count {
                    try backend.matmul(input, rows: 0..<tokens, weight: weight, into: output)
                }
                _ = try backend.read(output, rows: 0..<1)
                let seconds = Generator.seconds(clock.now - start) / Double(count)
                let weightBytes = matrix.packed.byteCount + matrix.scales.byteCount + matrix.biases.byteCount
                let bytes = Double(weightBytes + 4 * tokens * (matrix.columns + matrix.rows))
                let gigabytesPerSecond = bytes / seconds / 1e9
                rows.append(Row(name: name, shape: "\(matrix.rows)x\(matrix.columns)", tokens: tokens,
                                microsecondsPerCall: seconds * 1e6, gigabytesPerSecond: gigabytesPerSecond,
                                percentOfBandwidth: bandwidth.map { 100 * gigabytesPerSecond * 1e9 / $0 },
                                teraflops: 2 * Double(matrix.rows * matrix.columns * tokens) / seconds / 1e12,
                                relativeError: relativeError))
            }
        }
        return rows
    }
}
