import Foundation
import PhiFormats
import PhiModel

/// The CPU backend: SIMD kernels on all cores, reading quantized weights straight from their
/// (memory-mapped) storage, with a Float32 KV cache. Runs each operation when called.
public final class CPUBackend: InferenceBackend {
    /// Worker threads for matrix products and attention.
    public let threads: Int
    /// The threads that run every parallel operation, started once.
    let pool: WorkerPool
    public var name: String { "cpu (\(threads) threads)" }

    private var weights: ModelWeights?
    private var rotary = RotaryEmbedding(rotaryDimensions: 0, inverseFrequencies: [], attentionScaling: 1)
    private var contextLength = 0
    private var keys: OwnedBytes?    // (layers, contextLength, kvHeads × headDimension) Float32
    private var values: OwnedBytes?  // (layers, contextLength, kvHeads × headDimension) Float32
    /// The last positions rotated, with their cos and sin (see `rotaryTable`).
    private var rotaryCache: (positions: Range<Int>, cos: [Float], sin: [Float])?

    public init(threads: Int = ProcessInfo.processInfo.activeProcessorCount) {
        self.threads = max(1, threads)
        pool = WorkerPool(threads: self.threads)
    }

    public func prepare(weights: ModelWeights, contextLength: Int, rotary: RotaryEmbedding) throws {
        try Self.validate(weights)
        let config = weights.config
        let cacheBytes = config.layerCount * contextLength * config.kvHeadCount * config.headDimension * 4
        guard contextLength > 0, cacheBytes / max(contextLength, 1) < Int.max / max(contextLength, 1) else {
            throw BackendError.outOfMemory(what: "KV cache of \(contextLength) positions", bytes: cacheBytes)
        }
        self.weights = weights
        self.rotary = rotary
        rotaryCache = nil
        self.contextLength = contextLength
        keys = OwnedBytes(byteCount: cacheBytes)
        values = OwnedBytes(byteCount: cacheBytes)
    }

    /// Checks every tensor's shape against the config, so kernels can trust them.
    static func validate(_ weights: ModelWeights) throws {
        let c = weights.config
        func check(_ name: WeightName, rows: Int, columns: Int) throws {
            guard let m = weights.matrix(name) else { return }
            guard m.rows == rows, m.columns == columns else {
                throw BackendError.unsupportedWeight(
                    name: name.description, reason: "shape (\(m.rows), \(m.columns)), expected (\(rows), \(columns))")
            }
            guard m.bits == 4 || m.bits == 8, m.groupSize > 0, m.columns % m.groupSize == 0,
                  m.packed.byteCount >= m.rows * m.wordsPerRow * 4,
                  m.scales.byteCount >= m.rows * m.groupsPerRow * 2, m.biases.byteCount >= m.rows * m.groupsPerRow * 2
            else {
                throw BackendError.unsupportedWeight(
                    name: name.description,
                    reason: "\(m.bits)-bit, group \(m.groupSize), \(m.packed.byteCount) packed bytes: expected 4 or 8 bits and whole groups")
            }
        }
        func checkNorm(_ name: WeightName) throws {
            guard let n = weights.normWeight(name), n.byteCount == c.hiddenSize * 4 else {
                throw BackendError.unsupportedWeight(name: name.description, reason: "expected \(c.hiddenSize) Float32 values")
            }
        }
        guard weights.layers.count == c.layerCount, c.headCount % max(c.kvHeadCount, 1) == 0,
              c.rotaryDimensions <= c.headDimension, c.rotaryDimensions % 2 == 0 else {
            throw BackendError.unsupportedWeight(
                name: "config", reason: "\(weights.layers.count) layers for \(c.layerCount), \(c.headCount) heads over \(c.kvHeadCount) kv heads, rotary \(c.rotaryDimensions) of \(c.headDimension)")
        }
        let attentionWidth = c.headCount * c.headDimension
        try check(.embedding, rows: c.vocabularySize, columns: c.hiddenSize)
        try check(.lmHead, rows: c.vocabularySize, columns: c.hiddenSize)
        try checkNorm(.finalNorm)
        for layer in 0..<c.layerCount {
            try checkNorm(.attentionNorm(layer: layer))
            try checkNorm(.mlpNorm(layer: layer))
            try check(.qkv(layer: layer), rows: c.qkvRows, columns: c.hiddenSize)
            try check(.attentionOutput(layer: layer), rows: c.hiddenSize, columns: attentionWidth)
            try check(.gateUp(layer: layer), rows: 2 * c.intermediateSize, columns: c.hiddenSize)
            try check(.down(layer: layer), rows: c.hiddenSize, columns: c.intermediateSize)
        }
    }

    public func makeTensor(rows: Int, columns: Int) throws -> BackendTensor {
        CPUTensor(rows: rows, columns: columns)
    }

    public func embed(tokens: [Int32], into out: BackendTensor) throws {
        let (weights, out) = (try model(), try cpu(out))
        let table = weights.embedding
        for (i, token) in tokens.enumerated() {
            guard token >= 0, Int(token) < table.rows else {
                throw BackendError.badRange(what: "token id", range: Int(token)..<Int(token) + 1, limit: table.rows)
            }
            table.dequantizeRow(Int(token), into: UnsafeMutableBufferPointer(start: out.row(i), count: table.columns))
        }
    }

    public func rmsNorm(_ x: BackendTensor, weight: WeightName, count: Int, into out: BackendTensor) throws {
        let (weights, x, out) = (try model(), try cpu(x), try cpu(out))
        guard let norm = weights.normWeight(weight) else {
            throw BackendError.unsupportedWeight(name: weight.description, reason: "not a norm weight")
        }
        norm.withFloats { w in
            let (weight, epsilon) = (w.baseAddress!, weights.config.rmsNormEpsilon)
            pool.parallelRanges(count) { rows in
                TransformerKernels.rmsNorm(x.row(rows.lowerBound), weight: weight, epsilon: epsilon,
                                           dim: x.columns, count: rows.count, out: out.row(rows.lowerBound))
            }
        }
    }

    public func matmul(_ x: BackendTensor, rows: Range<Int>, weight: WeightName, into out: BackendTensor) throws {
        let (weights, x, out) = (try model(), try cpu(x), try cpu(out))
        guard let matrix = weights.matrix(weight) else {
            throw BackendError.unsupportedWeight(name: weight.description, reason: "not a matrix")
        }
        guard rows.lowerBound >= 0, rows.upperBound <= x.rows, rows.count <= out.rows,
              x.columns == matrix.columns, out.columns == matrix.rows else {
            throw BackendError.badRange(what: "matmul \(weight) rows", range: rows, limit: min(x.rows, out.rows))
        }
        QuantizedKernels.matmul(matrix, x: x.row(rows.lowerBound), xStride: x.columns, tokens: rows.count,
                                out: out.pointer, outStride: out.columns, pool: pool)
    }

    public func rotateAndCache(qkv: BackendTensor, layer: Int, startPosition: Int, count: Int,
                               queries: BackendTensor) throws {
        let (weights, qkv, queries) = (try model(), try cpu(qkv), try cpu(queries))
        let c = weights.config
        try checkPositions(startPosition, count)
        let qWidth = c.headCount * c.headDimension
        let kvWidth = c.kvHeadCount * c.headDimension
        let half = rotary.rotaryDimensions / 2
        let (cosines, sines) = rotaryTable(positions: startPosition..<startPosition + count)
        let (keys, values, heads, kvHeads, headDimension) = (keys, values, c.headCount, c.kvHeadCount, c.headDimension)
        cosines.withUnsafeBufferPointer { cosines in
            sines.withUnsafeBufferPointer { sines in
                guard let cosines = cosines.baseAddress, let sines = sines.baseAddress else { return }
                pool.parallelRanges(count) { rows in
                    for i in rows {
                        let position = startPosition + i
                        let source = qkv.row(i)
                        let query = queries.row(i)
                        let key = cacheRow(keys, layer: layer, position: position, config: c)
                        let value = cacheRow(values, layer: layer, position: position, config: c)
                        query.update(from: source, count: qWidth)
                        key.update(from: source + qWidth, count: kvWidth)
                        value.update(from: source + qWidth + kvWidth, count: kvWidth)
                        let (cos, sin) = (cosines + i * half, sines + i * half)
                        TransformerKernels.rotate(query, heads: heads, headDimension: headDimension,
                                                  cos: cos, sin: sin, half: half)
                        TransformerKernels.rotate(key, heads: kvHeads, headDimension: headDimension,
                                                  cos: cos, sin: sin, half: half)
                    }
                }
            }
        }
    }

    /// cos and sin of every position in `positions`: (positions, rotaryDimensions / 2) each, plus one
    /// spare element. Kept for the next call: every layer of a step rotates the same positions
    /// (32 × 48 cos and sin a token before).
    private func rotaryTable(positions: Range<Int>) -> (cos: [Float], sin: [Float]) {
        if let table = rotaryCache, table.positions == positions { return (table.cos, table.sin) }
        var cosines: [Float] = [], sines: [Float] = []
        cosines.reserveCapacity(positions.count * rotary.rotaryDimensions / 2 + 1)
        sines.reserveCapacity(positions.count * rotary.rotaryDimensions / 2 + 1)
        for position in positions {
            let (cos, sin) = rotary.cosSin(position: position)
            cosines += cos
            sines += sin
        }
        cosines.append(0)  // one spare, so the tables are never empty (no rotary dimensions)
        sines.append(0)
        rotaryCache = (positions, cosines, sines)
        return (cosines, sines)
    }

    public func attention(queries: BackendTensor, layer: Int, startPosition: Int, count: Int,
                          into out: BackendTensor) throws {
        let (weights, queries, out) = (try model(), try cpu(queries), try cpu(out))
        let c = weights.config
        try checkPositions(startPosition, count)
        let keys = UnsafePointer(cacheRow(keys, layer: layer, position: 0, config: c))
        let values = UnsafePointer(cacheRow(values, layer: layer, position: 0, config: c))
        let heads = c.headCount
        let scoreCapacity = startPosition + count
        pool.parallelRanges(count * heads) { items in
            let scores = UnsafeMutablePointer<Float>.allocate(capacity: scoreCapacity)  // (positions)
            defer { scores.deallocate() }
            for item in items {
                let (i, h) = (item / heads, item % heads)
                TransformerKernels.attendOne(
                    query: queries.row(i), position: startPosition + i, keys: keys, values: values,
                    headCount: heads, kvHeadCount: c.kvHeadCount, headDimension: c.headDimension,
                    heads: h..<h + 1, scores: scores, out: out.row(i))
            }
        }
    }

    public func siluGate(_ gateUp: BackendTensor, count: Int, into out: BackendTensor) throws {
        let (gateUp, out) = (try cpu(gateUp), try cpu(out))
        let intermediate = out.columns
        // Split over all elements, not rows: one decode row is 8192 exponentials.
        pool.parallelRanges(count * intermediate, minimumPerTask: 1024, granularity: 16) { elements in
            TransformerKernels.siluGate(gateUp.pointer, intermediate: intermediate, elements: elements,
                                        out: out.pointer)
        }
    }

    public func add(_ x: BackendTensor, count: Int, into accumulator: BackendTensor) throws {
        let (x, accumulator) = (try cpu(x), try cpu(accumulator))
        VectorMath.addScaled(x.pointer, 1, into: accumulator.pointer, count: count * x.columns)
    }

    public func read(_ tensor: BackendTensor, rows: Range<Int>) throws -> [Float] {
        let tensor = try cpu(tensor)
        guard rows.lowerBound >= 0, rows.upperBound <= tensor.rows else {
            throw BackendError.badRange(what: "read rows", range: rows, limit: tensor.rows)
        }
        return Array(UnsafeBufferPointer(start: tensor.row(rows.lowerBound), count: rows.count * tensor.columns))
    }

    // MARK: helpers

    private func model() throws -> ModelWeights {
        guard let weights else { throw BackendError.notPrepared }
        return weights
    }

    private func cpu(_ tensor: BackendTensor) throws -> CPUTensor {
        guard let tensor = tensor as? CPUTensor else {
            throw BackendError.unsupportedWeight(name: "tensor", reason: "not made by the CPU backend")
        }
        return tensor
    }

    private func checkPositions(_ start: Int, _ count: Int) throws {
        try BackendError.checkPositions(start, count, limit: contextLength)
    }

    /// (kvHeads × headDimension) cache row of `layer` at `position`.
    private func cacheRow(_ cache: OwnedBytes?, layer: Int, position: Int, config c: ModelConfig)
        -> UnsafeMutablePointer<Float> {
        let width = c.kvHeadCount * c.headDimension
        let base = cache!.pointer.assumingMemoryBound(to: Float.self)
        return base + (layer * contextLength + position) * width
    }
}
