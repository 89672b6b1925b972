import PhiModel

/// Small model configs for tests with random weights: every feature the forward pass supports.
enum TinyModels {
    /// phi3 with LongRoPE, partial rotary (12 of 16 dimensions) and grouped-query attention (4 over 2).
    static let phi3 = ModelConfig(
        architecture: .phi3, hiddenSize: 64, intermediateSize: 128, layerCount: 2, headCount: 4,
        kvHeadCount: 2, headDimension: 16, vocabularySize: 96, rmsNormEpsilon: 1e-5, ropeTheta: 10000,
        rotaryDimensions: 12, maxContext: 8192,
        longRoPE: .init(shortFactor: [1, 1.1, 1.2, 1.3, 1.4, 1.5], longFactor: [2, 4, 8, 16, 32, 64],
                        originalContext: 256),
        tiedEmbeddings: false)

    /// llama with tied embeddings and full rotary.
    static let llama = ModelConfig(
        architecture: .llama, hiddenSize: 64, intermediateSize: 192, layerCount: 2, headCount: 4,
        kvHeadCount: 1, headDimension: 16, vocabularySize: 80, rmsNormEpsilon: 1e-5, ropeTheta: 100000,
        rotaryDimensions: 16, maxContext: 2048, longRoPE: nil, tiedEmbeddings: true)
}
