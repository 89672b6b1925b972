/// The one transformer forward pass of `phi3` and `llama` models, over any `InferenceBackend`.
///
/// Holds the sequence position: `forward(tokens:logits:)` appends tokens to the KV cache, a prompt
/// in chunks of at most `maxBatch` tokens processed as matrices (prefill), a generated token alone
/// (decode). Only the final `read` (or `argmax`) synchronises with the backend.
public final class ForwardPass {
    /// Which rows of logits a call returns.
    public enum LogitRows: Sendable {
        /// (vocabularySize) logits of the last token.
        case last
        /// (tokens, vocabularySize) logits of every token.
        case all
    }

    public let config: ModelConfig
    public let backend: any InferenceBackend
    /// Positions the KV cache holds.
    public let contextLength: Int
    /// Most tokens processed by one pass over the layers.
    public let maxBatch: Int
    /// Tokens in the KV cache: the position of the next token.
    public private(set) var position = 0

    private let x: BackendTensor          // (maxBatch, hiddenSize) the residual stream
    private let normed: BackendTensor     // (maxBatch, hiddenSize)
    private let qkv: BackendTensor        // (maxBatch, qkvRows) q | k | v
    private let queries: BackendTensor    // (maxBatch, headCount × headDimension) rotated q
    private let attended: BackendTensor   // (maxBatch, headCount × headDimension)
    private let projected: BackendTensor  // (maxBatch, hiddenSize) attention or MLP output
    private let gateUp: BackendTensor     // (maxBatch, 2 × intermediateSize) gate | up
    private let gated: BackendTensor      // (maxBatch, intermediateSize) silu(gate) × up
    private let logitCapacity: Int         // rows of `logits`: a long prompt's logits come in parts
    private let logits: BackendTensor     // (logitCapacity, vocabularySize)

    /// Prepares `weights` on `backend` with a KV cache of `contextLength` positions; prompts go
    /// through the layers `maxBatch` tokens at a time (unless given, the backend's `preferredBatch`,
    /// at most the context).
    public init(weights: ModelWeights, backend: any InferenceBackend, contextLength: Int,
                maxBatch: Int? = nil) throws {
        let maxBatch = maxBatch ?? max(1, min(backend.preferredBatch, contextLength))
        let config = weights.config
        guard contextLength > 0, maxBatch > 0 else {
            throw BackendError.badRange(what: "context length and batch", range: 0..<max(contextLength, maxBatch), limit: 1)
        }
        self.config = config
        self.backend = backend
        self.contextLength = contextLength
        self.maxBatch = maxBatch
        try backend.prepare(weights: weights, contextLength: contextLength,
                            rotary: RotaryEmbedding(config: config, contextLength: contextLength))
        let attentionWidth = config.headCount * config.headDimension
        x = try backend.makeTensor(rows: maxBatch, columns: config.hiddenSize)
        normed = try backend.makeTensor(rows: maxBatch, columns: config.hiddenSize)
        qkv = try backend.makeTensor(rows: maxBatch, columns: config.qkvRows)
        queries = try backend.makeTensor(rows: maxBatch, columns: attentionWidth)
        attended = try backend.makeTensor(rows: maxBatch, columns: attentionWidth)
        projected = try backend.makeTensor(rows: maxBatch, columns: config.hiddenSize)
        gateUp = try backend.makeTensor(rows: maxBatch, columns: 2 * config.intermediateSize)
        gated = try backend.makeTensor(rows: maxBatch, columns: config.intermediateSize)
        logitCapacity = min(maxBatch, 64)
        logits = try backend.makeTensor(rows: logitCapacity, columns: config.vocabularySize)
    }

    /// Forgets the sequence: the next token goes to position 0.
    public func reset() { position = 0 }

    /// Appends `tokens` to the sequence and returns their logits: (vocabularySize) for `.last`,
    /// (tokens.count, vocabularySize) for `.all`. Throws if the context window would overflow.
    public func forward(tokens: [Int32], logits rows: LogitRows) throws -> [Float] {
        var result: [Float] = []
        try process(tokens, rows: rows) { count in result += try backend.read(logits, rows: 0..<count) }
        return result
    }

    /// Appends `tokens` to the sequence and returns the most likely next token (the argmax of the
    /// last token's logits, found by the backend: on a GPU only its index comes back).
    public func greedyNext(tokens: [Int32]) throws -> Int32 {
        guard !tokens.isEmpty else { throw BackendError.badRange(what: "tokens", range: 0..<0, limit: 1) }
        var next: Int32 = 0
        try process(tokens, rows: .last) { _ in next = try backend.argmax(logits, row: 0) }
        return next
    }

    /// Runs `tokens` through the model in chunks of at most maxBatch; for each chunk whose logits
    /// `rows` asks for, its logits are computed logitCapacity rows at a time, and after each part
    /// `take` gets how many rows of `logits` it holds.
    private func process(_ tokens: [Int32], rows: LogitRows, take: (Int) throws -> Void) throws {
        guard !tokens.isEmpty else { return }
        guard position + tokens.count <= contextLength else {
            throw BackendError.contextTooLong(requested: position + tokens.count, limit: contextLength)
        }
        for token in tokens where token < 0 || Int(token) >= config.vocabularySize {
            throw BackendError.badRange(what: "token id \(token)", range: Int(token)..<Int(token) + 1,
                                        limit: config.vocabularySize)
        }
        var start = 0
        while start < tokens.count {
            let chunk = Array(tokens[start..<min(start + maxBatch, tokens.count)])
            start += chunk.count
            let isLast = start == tokens.count
            try run(chunk)
            guard rows == .all || isLast else { continue }
            // The final norm, then the LM head at most logitCapacity rows at a time.
            try backend.rmsNorm(x, weight: .finalNorm, count: chunk.count, into: normed)
            let wanted = rows == .all ? 0..<chunk.count : chunk.count - 1..<chunk.count
            for first in stride(from: wanted.lowerBound, to: wanted.upperBound, by: logitCapacity) {
                let part = first..<min(first + logitCapacity, wanted.upperBound)
                try backend.matmul(normed, rows: part, weight: .lmHead, into: logits)
                try take(part.count)
            }
        }
    }

    /// One pass of `tokens` (at most maxBatch) through every layer, into `x`.
    private func run(_ tokens: [Int32]) throws {
        let n = tokens.count
        let start = position
        try backend.embed(tokens: tokens, into: x)
        for layer in 0..<config.layerCount {
            // Attention: x += Wo · attention(rope(Wqkv · norm(x)))
            try backend.rmsNorm(x, weight: .attentionNorm(layer: layer), count: n, into: normed)
            try backend.matmul(normed, rows: 0..<n, weight: .qkv(layer: layer), into: qkv)
            try backend.rotateAndCache(qkv: qkv, layer: layer, startPosition: start, count: n, queries: queries)
            try backend.attention(queries: queries, layer: layer, startPosition: start, count: n, into: attended)
            try backend.matmul(attended, rows: 0..<n, weight: .attentionOutput(layer: layer), into: projected)
            try backend.add(projected, count: n, into: x)
            // MLP: x += Wdown · (silu(gate) × up), gate | up = Wgu · norm(x)
            try backend.rmsNorm(x, weight: .mlpNorm(layer: layer), count: n, into: normed)
            try backend.matmul(normed, rows: 0..<n, weight: .gateUp(layer: layer), into: gateUp)
            try backend.siluGate(gateUp, count: n, into: gated)
            try backend.matmul(gated, rows: 0..<n, weight: .down(layer: layer), into: projected)
            try backend.add(projected, count: n, into: x)
        }
        position += n
    }
}
