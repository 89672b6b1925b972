import PhiFormats

/// The hyperparameters of a `phi3` or `llama` model, whatever file they were read from.
public struct ModelConfig: Sendable, Equatable {
    /// Which family of checkpoint this is.
    public enum Architecture: String, Sendable {
        case phi3, llama
    }

    /// LongRoPE (`longrope` / `su`) scaling of Phi-3.5-mini and Phi-4-mini.
    public struct LongRoPE: Sendable, Equatable {
        /// (rotaryDimensions / 2) factors used while the context window is at most `originalContext`.
        public var shortFactor: [Float]
        /// (rotaryDimensions / 2) factors used beyond it.
        public var longFactor: [Float]
        /// `original_max_position_embeddings`.
        public var originalContext: Int

        public init(shortFactor: [Float], longFactor: [Float], originalContext: Int) {
            self.shortFactor = shortFactor
            self.longFactor = longFactor
            self.originalContext = originalContext
        }
    }

    public var architecture: Architecture
    public var hiddenSize: Int
    public var intermediateSize: Int
    public var layerCount: Int
    public var headCount: Int
    public var kvHeadCount: Int
    /// hiddenSize / headCount unless the checkpoint says otherwise.
    public var headDimension: Int
    public var vocabularySize: Int
    public var rmsNormEpsilon: Float
    public var ropeTheta: Float
    /// Dimensions of each head that RoPE rotates (rotate-half style): headDimension × partial_rotary_factor.
    public var rotaryDimensions: Int
    /// `max_position_embeddings`: the longest context the model supports.
    public var maxContext: Int
    public var longRoPE: LongRoPE?
    /// The LM head shares the embedding matrix.
    public var tiedEmbeddings: Bool

    public init(architecture: Architecture, hiddenSize: Int, intermediateSize: Int, layerCount: Int,
                headCount: Int, kvHeadCount: Int, headDimension: Int, vocabularySize: Int,
                rmsNormEpsilon: Float, ropeTheta: Float, rotaryDimensions: Int, maxContext: Int,
                longRoPE: LongRoPE?, tiedEmbeddings: Bool) {
        self.architecture = architecture
        self.hiddenSize = hiddenSize
        self.intermediateSize = intermediateSize
        self.layerCount = layerCount
        self.headCount = headCount
        self.kvHeadCount = kvHeadCount
        self.headDimension = headDimension
        self.vocabularySize = vocabularySize
        self.rmsNormEpsilon = rmsNormEpsilon
        self.ropeTheta = ropeTheta
        self.rotaryDimensions = rotaryDimensions
        self.maxContext = maxContext
        self.longRoPE = longRoPE
        self.tiedEmbeddings = tiedEmbeddings
    }

    /// Rows of the fused QKV projection: q | k | v.
    public var qkvRows: Int { (headCount + 2 * kvHeadCount) * headDimension }
}

/// One transformer block's weights in the engine layout (the fused form of Phi-3: llama
/// checkpoints are fused on load, q | k | v and gate | up).
public struct LayerWeights: Sendable {
    /// (hiddenSize) Float32.
    public var attentionNorm: TensorStorage
    /// (qkvRows, hiddenSize): rows q | k | v.
    public var qkv: QuantizedMatrix
    /// (hiddenSize, headCount × headDimension).
    public var output: QuantizedMatrix
    /// (hiddenSize) Float32.
    public var mlpNorm: TensorStorage
    /// (2 × intermediateSize, hiddenSize): rows gate | up.
    public var gateUp: QuantizedMatrix
    /// (hiddenSize, intermediateSize).
    public var down: QuantizedMatrix

    public init(attentionNorm: TensorStorage, qkv: QuantizedMatrix, output: QuantizedMatrix,
                mlpNorm: TensorStorage, gateUp: QuantizedMatrix, down: QuantizedMatrix) {
        self.attentionNorm = attentionNorm
        self.qkv = qkv
        self.output = output
        self.mlpNorm = mlpNorm
        self.gateUp = gateUp
        self.down = down
    }
}

/// A whole model's weights in the engine layout, whatever format they came from.
public struct ModelWeights: Sendable {
    public var config: ModelConfig
    /// (vocabularySize, hiddenSize) quantized embedding table.
    public var embedding: QuantizedMatrix
    public var layers: [LayerWeights]
    /// (hiddenSize) Float32.
    public var finalNorm: TensorStorage
    /// (vocabularySize, hiddenSize); the embedding itself when tied.
    public var lmHead: QuantizedMatrix

    public init(config: ModelConfig, embedding: QuantizedMatrix, layers: [LayerWeights],
                finalNorm: TensorStorage, lmHead: QuantizedMatrix) {
        self.config = config
        self.embedding = embedding
        self.layers = layers
        self.finalNorm = finalNorm
        self.lmHead = lmHead
    }
}
