import PhiFormats

/// Names one weight tensor of the prepared model, so that the forward pass can ask a backend for an
/// operation on it without knowing where the backend keeps it (mapped file, GPU buffer).
public enum WeightName: Hashable, Sendable, CustomStringConvertible {
    /// (vocabularySize, hiddenSize) quantized.
    case embedding
    /// (hiddenSize) Float32.
    case attentionNorm(layer: Int)
    /// (qkvRows, hiddenSize) quantized, rows q | k | v.
    case qkv(layer: Int)
    /// (hiddenSize, headCount × headDimension) quantized.
    case attentionOutput(layer: Int)
    /// (hiddenSize) Float32.
    case mlpNorm(layer: Int)
    /// (2 × intermediateSize, hiddenSize) quantized, rows gate | up.
    case gateUp(layer: Int)
    /// (hiddenSize, intermediateSize) quantized.
    case down(layer: Int)
    /// (hiddenSize) Float32.
    case finalNorm
    /// (vocabularySize, hiddenSize) quantized; the embedding when tied.
    case lmHead

    public var description: String {
        switch self {
        case .embedding: "embedding"
        case .attentionNorm(let layer): "layers.\(layer).attention_norm"
        case .qkv(let layer): "layers.\(layer).qkv"
        case .attentionOutput(let layer): "layers.\(layer).attention_output"
        case .mlpNorm(let layer): "layers.\(layer).mlp_norm"
        case .gateUp(let layer): "layers.\(layer).gate_up"
        case .down(let layer): "layers.\(layer).down"
        case .finalNorm: "final_norm"
        case .lmHead: "lm_head"
        }
    }
}

extension ModelWeights {
    /// The quantized matrix called `name`, or nil for a norm vector.
    public func matrix(_ name: WeightName) -> QuantizedMatrix? {
        switch name {
        case .embedding: embedding
        case .qkv(let layer): layers[layer].qkv
        case .attentionOutput(let layer): layers[layer].output
        case .gateUp(let layer): layers[layer].gateUp
        case .down(let layer): layers[layer].down
        case .lmHead: lmHead
        case .attentionNorm, .mlpNorm, .finalNorm: nil
        }
    }

    /// The (hiddenSize) Float32 norm weight called `name`, or nil for a matrix.
    public func normWeight(_ name: WeightName) -> TensorStorage? {
        switch name {
        case .attentionNorm(let layer): layers[layer].attentionNorm
        case .mlpNorm(let layer): layers[layer].mlpNorm
        case .finalNorm: finalNorm
        default: nil
        }
    }
}

/// A backend-owned (rows, columns) Float32 activation tensor. Backends subclass it to attach their
/// memory (a host buffer, a GPU buffer); the forward pass only sees the shape.
open class BackendTensor: @unchecked Sendable {
    /// Rows allocated: the most tokens one forward call may process.
    public let rows: Int
    /// Features per row.
    public let columns: Int

    public init(rows: Int, columns: Int) {
        self.rows = rows
        self.columns = columns
    }
}

/// Errors a backend reports while preparing a model or running it.
public enum BackendError: Error, CustomStringConvertible {
    case contextTooLong(requested: Int, limit: Int)
    case outOfMemory(what: String, bytes: Int)
    case unsupportedWeight(name: String, reason: String)
    case notPrepared
    case badRange(what: String, range: Range<Int>, limit: Int)

    public var description: String {
        switch self {
        case .contextTooLong(let requested, let limit):
            "context of \(requested) tokens exceeds the limit of \(limit); pass a smaller prompt or a larger --ctx"
        case .outOfMemory(let what, let bytes):
            "could not allocate \(bytes) bytes for \(what); lower --ctx or use a smaller model"
        case .unsupportedWeight(let name, let reason):
            "weight \(name) is not supported by this backend: \(reason)"
        case .notPrepared:
            "the backend has no model prepared; call prepare(weights:contextLength:rotary:) first"
        case .badRange(let what, let range, let limit):
            "\(what): range \(range) is outside 0..<\(limit)"
        }
    }
}

extension BackendError {
    /// Throws `contextTooLong` unless positions `start ..< start + count` fit a cache of `limit`.
    public static func checkPositions(_ start: Int, _ count: Int, limit: Int) throws {
        guard start >= 0, start + count <= limit else {
            throw BackendError.contextTooLong(requested: start + count, limit: limit)
        }
    }
}

/// The operations the one forward pass needs, on backend-owned tensors.
///
/// A GPU backend may only record each call into a command buffer and run the recording at the next
/// synchronisation point, `read(_:rows:)`; the forward pass never reads a tensor back mid-way.
/// Rows `0..<count` of each tensor are the tokens of the current call; token `i` sits at position
/// `startPosition + i` of the sequence.
public protocol InferenceBackend: AnyObject {
    /// A short name for messages and benchmarks, e.g. "cpu (2 threads)".
    var name: String { get }

    /// Prompt tokens the forward pass gives the backend at once unless told otherwise: as many as
    /// its prompt kernels use well (64 unless the backend says more).
    var preferredBatch: Int { get }

    /// Takes the model (uploading or preparing weights once) and allocates a KV cache of
    /// `contextLength` positions. `rotary` holds the RoPE frequencies chosen for that context.
    func prepare(weights: ModelWeights, contextLength: Int, rotary: RotaryEmbedding) throws

    /// A new (rows, columns) Float32 activation tensor.
    func makeTensor(rows: Int, columns: Int) throws -> BackendTensor

    /// out[i, :] = row `tokens[i]` of the dequantized embedding. out: (tokens.count, hiddenSize).
    func embed(tokens: [Int32], into out: BackendTensor) throws

    /// out[i, :] = x[i, :] / sqrt(mean(x[i, :]²) + eps) × weight, for i in 0..<count.
    func rmsNorm(_ x: BackendTensor, weight: WeightName, count: Int, into out: BackendTensor) throws

    /// out[i - rows.lowerBound, :] = x[i, :] · Wᵀ for i in `rows`: x (tokens, in), W (out, in) quantized.
    func matmul(_ x: BackendTensor, rows: Range<Int>, weight: WeightName, into out: BackendTensor) throws

    /// Rotates the q and k parts of `qkv` (count, qkvRows) for positions startPosition..., writes
    /// rotated q into `queries` (count, headCount × headDimension), and rotated k and v into the
    /// layer's KV cache at those positions.
    func rotateAndCache(qkv: BackendTensor, layer: Int, startPosition: Int, count: Int,
                        queries: BackendTensor) throws

    /// Causal grouped-query attention of `queries` (count, headCount × headDimension) over the
    /// layer's cache positions 0...startPosition + i; out: (count, headCount × headDimension).
    func attention(queries: BackendTensor, layer: Int, startPosition: Int, count: Int,
                   into out: BackendTensor) throws

    /// out[i, j] = silu(gateUp[i, j]) × gateUp[i, intermediate + j]; gateUp (count, 2 × intermediate).
    func siluGate(_ gateUp: BackendTensor, count: Int, into out: BackendTensor) throws

    /// accumulator[i, :] += x[i, :] for i in 0..<count.
    func add(_ x: BackendTensor, count: Int, into accumulator: BackendTensor) throws

    /// Runs everything recorded so far and returns rows `rows` of `tensor`, row-major.
    func read(_ tensor: BackendTensor, rows: Range<Int>) throws -> [Float]

    /// Runs everything recorded so far and returns the index of the largest value of row `row` of
    /// `tensor`, the first of equal ones (`Sampler.argmax`).
    func argmax(_ tensor: BackendTensor, row: Int) throws -> Int32
}

extension InferenceBackend {
    public var preferredBatch: Int { 64 }

    /// Reads the row back and finds its largest value on the host.
    public func argmax(_ tensor: BackendTensor, row: Int) throws -> Int32 {
        Sampler.argmax(try read(tensor, rows: row..<row + 1))
    }
}

/// GPU time of one kind of kernel within a profiled forward call.
public struct KernelTime: Sendable, Codable {
    /// The shader variant (or "copy").
    public var name: String
    /// Dispatches of it in the call.
    public var dispatches: Int
    /// GPU seconds spent in them, each measured up to the end of the barrier that follows it.
    public var seconds: Double

    public init(name: String, dispatches: Int, seconds: Double) {
        self.name = name
        self.dispatches = dispatches
        self.seconds = seconds
    }
}

/// A backend that can time each of its kernels on the device (GPU timestamps).
public protocol ProfilingBackend: InferenceBackend {
    /// While true, every synchronisation records a timestamp after each command.
    var profiling: Bool { get set }
    /// Kernel times of the last synchronisation made while profiling, slowest first.
    var lastProfile: [KernelTime] { get }
    /// Host seconds spent queueing the last synchronisation's commands (from the first to the submit).
    var lastQueueSeconds: Double { get }
}
