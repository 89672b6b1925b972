import PhiFormats

/// Model weights of any shape filled with seeded random values, built in memory: for tests before
/// real checkpoints and for benchmarks of real shapes (`phi-gpu bench`).
///
/// Quantized values are uniform random bits; each group's scale is uniform in
/// [0.5, 1.5] × `weightScale` / 2^bits and its bias centres the group on zero, so activations stay
/// in a sensible range through many layers. Norm weights are uniform in [0.8, 1.2].
public enum RandomWeights {
    /// Phi-3.5-mini's shapes: hidden 3072, 32 layers, 32 heads (no GQA), intermediate 8192, vocab 32064.
    public static let phi35MiniConfig = ModelConfig(
        architecture: .phi3, hiddenSize: 3072, intermediateSize: 8192, layerCount: 32, headCount: 32,
        kvHeadCount: 32, headDimension: 96, vocabularySize: 32064, rmsNormEpsilon: 1e-5, ropeTheta: 10000,
        rotaryDimensions: 96, maxContext: 131072,
        longRoPE: .init(shortFactor: .init(repeating: 1, count: 48), longFactor: .init(repeating: 4, count: 48),
                        originalContext: 4096),
        tiedEmbeddings: false)

    /// Phi-4-mini's shapes: hidden 3072, 32 layers, 24 heads / 8 KV heads of 128, intermediate 8192,
    /// vocab 200064, partial rotary 0.75 (96 dimensions), tied embeddings, LongRoPE from 4096.
    public static let phi4MiniConfig = ModelConfig(
        architecture: .phi3, hiddenSize: 3072, intermediateSize: 8192, layerCount: 32, headCount: 24,
        kvHeadCount: 8, headDimension: 128, vocabularySize: 200_064, rmsNormEpsilon: 1e-5, ropeTheta: 10000,
        rotaryDimensions: 96, maxContext: 131_072,
        longRoPE: .init(shortFactor: .init(repeating: 1, count: 48), longFactor: .init(repeating: 4, count: 48),
                        originalContext: 4096),
        tiedEmbeddings: true)

    /// Random weights of `config`'s shapes; the same seed gives the same weights.
    public static func make(config: ModelConfig, seed: UInt64, bits: Int = 4, groupSize: Int = 64,
                            weightScale: Float = 0.5) -> ModelWeights {
        var random = SplitMix64(seed: seed)
        let hidden = config.hiddenSize
        func matrix(_ rows: Int, _ columns: Int) -> QuantizedMatrix {
            // Inputs shrink the spread by 1/sqrt(columns) so outputs keep unit scale.
            let spread = weightScale / Float(columns).squareRoot() * 2 / Float(1 << bits)
            return randomMatrix(rows: rows, columns: columns, bits: bits, groupSize: groupSize,
                                spread: spread, random: &random)
        }
        func norm() -> TensorStorage {
            TensorStorage(copying: (0..<hidden).map { _ in 0.8 + 0.4 * Float(random.nextUnitDouble()) })
        }
        let embedding = randomMatrix(rows: config.vocabularySize, columns: hidden, bits: bits, groupSize: groupSize,
                                     spread: 2 / Float(1 << bits), random: &random)
        let layers = (0..<config.layerCount).map { _ in
            LayerWeights(attentionNorm: norm(), qkv: matrix(config.qkvRows, hidden),
                         output: matrix(hidden, config.headCount * config.headDimension), mlpNorm: norm(),
                         gateUp: matrix(2 * config.intermediateSize, hidden),
                         down: matrix(hidden, config.intermediateSize))
        }
        let finalNorm = norm()
        let lmHead = config.tiedEmbeddings ? embedding : matrix(config.vocabularySize, hidden)
        return ModelWeights(config: config, embedding: embedding, layers: layers, finalNorm: finalNorm, lmHead: lmHead)
    }

    /// One (rows, columns) matrix: random packed bits, scales in [0.5, 1.5] × spread, zero-centred biases.
    static func randomMatrix(rows: Int, columns: Int, bits: Int, groupSize: Int, spread: Float,
                             random: inout SplitMix64) -> QuantizedMatrix {
        let words = rows * columns * bits / 32
        let packed = OwnedBytes(byteCount: words * 4)
        let packedWords = packed.pointer.bindMemory(to: UInt32.self, capacity: words)
        var i = 0
        while i + 1 < words {
            let r = random.next()
            packedWords[i] = UInt32(truncatingIfNeeded: r)
            packedWords[i + 1] = UInt32(truncatingIfNeeded: r >> 32)
            i += 2
        }
        if i < words { packedWords[i] = UInt32(truncatingIfNeeded: random.next()) }
        let groups = rows * (columns / groupSize)
        var scales = [Float16](repeating: 0, count: groups)
        var biases = [Float16](repeating: 0, count: groups)
        let middle = Float((1 << bits) - 1) / 2
        for g in 0..<groups {
            let scale = Float16(spread * (0.5 + Float(random.nextUnitDouble())))
            scales[g] = scale
            biases[g] = Float16(-Float(scale) * middle)
        }
        return QuantizedMatrix(
            rows: rows, columns: columns, bits: bits, groupSize: groupSize,
            packed: TensorStorage(owner: packed, bytes: UnsafeRawBufferPointer(start: packed.pointer, count: words * 4)),
            scales: TensorStorage(copying: scales), biases: TensorStorage(copying: biases))
    }
}
