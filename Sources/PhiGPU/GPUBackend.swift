import Foundation
import PhiFormats
import PhiModel
import PhiShaders
import VulkanKit

/// The Vulkan backend: the forward pass's operations as compute shaders on one GPU.
///
/// Operations are queued into a `CommandStream`, which submits them in segments of a few dozen
/// commands (a barrier after each) while the rest are still being queued; only `read` waits for the
/// GPU. Values that change from step to step (token ids, positions) live in host-visible buffers
/// that the shaders read, not in the recording; so when a step queues exactly what the previous one
/// did (every decode step of one shape), the command buffers recorded then are submitted again.
public final class GPUBackend: ProfilingBackend {
    public let context: GPUContext
    public var name: String { "gpu (\(context.device.physical.name))" }
    /// Prompts go through the layers `promptBatch` tokens at a time.
    public var preferredBatch: Int { Self.promptBatch }

    /// 2,048 tokens, or `PHI_GPU_BATCH` (1 to 8,192; fewer need less memory for activations). Larger
    /// batches fill the GPU with fewer partial waves of tiles: on an H200 a 2,048-token prompt ran
    /// 16,250 t/s in one batch against 14,340 in batches of 512 (Phi-4-mini 17,170 against 14,250), a
    /// 426-token one 9,100-9,300 in one batch against 3,000 in batches of 64 (BENCHMARKS.md,
    /// fourteenth and eighth sessions).
    static let promptBatch: Int = {
        guard let value = ProcessInfo.processInfo.environment[batchVariable].flatMap(Int.init) else { return 2048 }
        return min(max(value, 1), 8192)
    }()

    /// The environment variable that sets `promptBatch`.
    static let batchVariable = "PHI_GPU_BATCH"
    /// Called while weights upload: (bytes sent, bytes in all).
    public var uploadProgress: ((Int, Int) -> Void)?

    var config: ModelConfig?
    var contextLength = 0
    private var matrices: [WeightName: GPUMatrix] = [:]
    private var norms: [WeightName: Buffer] = [:]     // (hiddenSize) Float32 each
    var keyCache: [Buffer] = []                       // per layer: (kvHeads, contextLength, headDim) Float16
    var valueCache: [Buffer] = []                     // per layer: (kvHeads, contextLength, headDim) Float16
    var partials: Buffer?                             // (splitTokens, heads, chunks, headDim + 4) Float32: split attention
    var finishedCounts: Buffer?                       // (splitTokens, heads) UInt32: split attention's workgroups done, 0 between dispatches
    private var partSums: Buffer?                     // (parts, rows) Float32: decode products split over their chunks
    private var partCounts: Buffer?                   // (row blocks) UInt32: their parts finished, 0 between dispatches
    var prefillPartSums: GPUTensor?                   // (parts · tokens, rows) the partial sums of a prefill product split over its columns, grown on demand
    var streamKPartials: Buffer?                      // (workgroups, 3, tile values) Float32: stream-K products' split tiles, grown on demand
    var streamKCounts: Buffer?                        // (tiles) UInt32: their pieces done, 0 between dispatches
    var halfInputs: GPUTensor?                        // (tokens, columns / 2) Float16 pairs: x of a cooperative prefill product, grown on demand
    var argmaxResult: GPUTensor?                      // (1, 1) the UInt32 index argmax.comp writes, read as a Float's bits
    var attentionChunkSize = 0
    var attentionChunks = 0
    let splitTokens = 4                               // queries up to this many use split (decode) attention
    /// Keys per chunk of the split attention instead of the policy's (tests set it before `prepare`
    /// to reach every path of attention_split.comp).
    var attentionKeysPerChunk: Int?
    /// The prompt attention to use instead of the chosen one (tests, to run every kernel the device has).
    var promptAttentionKind: PromptAttention.Kind?
    var splitWidth: Int { min(128, context.device.physical.maxWorkgroupInvocations) } // its workgroup size
    var cosines: Buffer?                              // (contextLength, rotary / 2) Float32, scaled
    var sines: Buffer?                                // (contextLength, rotary / 2) Float32, scaled
    var rotaryDimensions = 0
    private var tokens: Buffer?                       // (tokenCapacity) Int32, host-written (GPU memory where mappable)
    private let tokenCapacity = 4096
    private var tokensUsed = 0
    private var readback: Buffer?                     // host-visible staging for `read`
    let parameters: Buffer                            // (parameterCapacity) UInt32, host-written: positions
    private let parameterCapacity = 1024
    private var parametersUsed = 0

    let stream: CommandStream
    /// The last queued product, while it may still take the residual add that follows it.
    private var lastProduct: QueuedProduct?
    /// The last queued one-token RMSNorm or SiLU gate, while the product that follows may fuse it.
    private var lastPrologue: QueuedPrologue?
    /// The last queued RoPE-and-cache of a decode step, while the split attention may take it over.
    var lastRotation: QueuedRotation?
    /// The last queued prompt operation that wrote a Float16 copy of its output (checked by index,
    /// so that re-queueing the product after it keeps it).
    var lastHalfCopy: QueuedHalfCopy?
    /// Whether prompt RMSNorms and SiLU gates write that copy: where prefill products read Float16
    /// (cooperative matrices, unless `PHI_GPU_PREFILL` forces another kernel). Tests set it.
    var writesHalfCopies: Bool
    private let rmsNormKernel: RMSNormKernel
    /// Command buffers recorded so far; a replayed one does not count (for benchmarks and tests).
    public var recordings: Int { stream.recordings }
    public var submissions: Int { stream.submissions }
    /// Host time spent queueing the last synchronisation's commands (from the first to the final submit), seconds.
    public var lastQueueSeconds: Double { stream.lastQueueSeconds }
    /// While true, a synchronisation submits everything at once and records a timestamp after every command.
    public var profiling: Bool {
        get { stream.profiling }
        set { stream.profiling = newValue }
    }
    public var lastProfile: [KernelTime] { stream.lastProfile }
    /// How decode products are chosen and tuned (the environment's overrides unless set).
    public var decodeProducts = DecodeProductSettings.fromEnvironment

    /// A backend on `context`; at most `segmentLength` commands go to the GPU in one early submission.
    public init(context: GPUContext, segmentLength: Int = 24) throws {
        self.context = context
        stream = try CommandStream(device: context.device, segmentLength: segmentLength)
        rmsNormKernel = try RMSNormKernel(context: context)
        let forced = PrefillKernel.processEnvironment[PrefillKernel.environmentVariable] ?? ""
        writesHalfCopies = (forced.isEmpty || forced == PrefillKernel.Kind.cooperativeMatrix.rawValue)
            && PrefillKernel.variant(.cooperativeMatrix, bits: 4, tile: PrefillKernel.defaultTile)?.runs(on: context.device) == true
        parameters = try Buffer(device: context.device, byteCount: parameterCapacity * 4, location: .hostWritten, label: "parameters")
    }

    // MARK: Preparing a model

    public func prepare(weights: ModelWeights, contextLength: Int, rotary: RotaryEmbedding) throws {
        let config = weights.config
        try flush()
        stream.forgetRecordings()
        let names: [WeightName] = [.embedding, .lmHead] + (0..<config.layerCount).flatMap { layer in
            [.qkv(layer: layer), .attentionOutput(layer: layer), .gateUp(layer: layer), .down(layer: layer)]
        }
        let tied = weights.embedding.packed.bytes.baseAddress == weights.lmHead.packed.bytes.baseAddress
        let matrixBytes = names.filter { !(tied && $0 == .lmHead) }.reduce(0) { total, name in
            total + (weights.matrix(name).map(GPUMatrix.byteCount(of:)) ?? 0)
        }
        guard config.headDimension % 2 == 0 else {
            throw BackendError.unsupportedWeight(name: "attention", reason: "odd head dimension \(config.headDimension)")
        }
        let cacheBytes = 2 * config.layerCount * config.kvHeadCount * contextLength * config.headDimension * 2
        let ropeBytes = 2 * contextLength * (rotary.rotaryDimensions / 2) * 4
        let normBytes = (2 * config.layerCount + 1) * config.hiddenSize * 4
        // Activations of a prompt batch (ForwardPass's tensors, the Float16 copies, the partial sums
        // of products split in up to 4 parts, stream-K's 3 tiles of 256 × 144 per multiprocessor)
        // and 64 rows of logits.
        let batch = min(Self.promptBatch, contextLength)
        let attentionWidth = config.headCount * config.headDimension
        let activationBytes = batch * (4 * config.hiddenSize + config.qkvRows + 2 * attentionWidth + 3 * config.intermediateSize) * 4
            + batch * config.intermediateSize * 2 + 4 * batch * config.hiddenSize * 4
            + (context.device.physical.multiprocessors ?? 0) * 3 * 256 * 144 * 4 + 64 * config.vocabularySize * 4
        let needed = matrixBytes + cacheBytes + ropeBytes + normBytes + activationBytes
        // A CPU-type device (llvmpipe) allocates from system memory: its advertised heap is nominal.
        let physical = context.device.physical
        let available = physical.kind == .cpu
            ? max(physical.availableDeviceBytes, ProcessInfo.processInfo.physicalMemory / 2) : physical.availableDeviceBytes
        if UInt64(needed) > available {
            throw GPUOutOfMemory(device: context.device.physical.name, needed: needed, available: available,
                                 cacheBytes: cacheBytes, contextLength: contextLength, batch: batch, activationBytes: activationBytes)
        }

        matrices = [:]
        norms = [:]
        var sent = 0
        for name in names {
            guard let matrix = weights.matrix(name) else { continue }
            if tied && name == .lmHead, let embedding = matrices[.embedding] {
                matrices[.lmHead] = embedding
                continue
            }
            let base = sent
            matrices[name] = try GPUMatrix(matrix, name: "\(name)", context: context) { [uploadProgress] in
                uploadProgress?(base + $0, matrixBytes)
            }
            sent += GPUMatrix.byteCount(of: matrix)
        }
        let normNames: [WeightName] = [.finalNorm] + (0..<config.layerCount).flatMap { [.attentionNorm(layer: $0), .mlpNorm(layer: $0)] }
        for name in normNames {
            guard let storage = weights.normWeight(name) else { continue }
            let buffer = try Buffer(device: context.device, byteCount: storage.byteCount, location: .deviceLocal, label: "\(name)")
            try withExtendedLifetime(storage.owner) { try buffer.upload(storage.bytes) }
            norms[name] = buffer
        }

        let layerCacheBytes = config.kvHeadCount * contextLength * config.headDimension * 2
        keyCache = try (0..<config.layerCount).map {
            try Buffer(device: context.device, byteCount: layerCacheBytes, location: .deviceLocal, label: "layers.\($0).keys")
        }
        valueCache = try (0..<config.layerCount).map {
            try Buffer(device: context.device, byteCount: layerCacheBytes, location: .deviceLocal, label: "layers.\($0).values")
        }
        var cosineTable: [Float] = []
        var sineTable: [Float] = []
        cosineTable.reserveCapacity(contextLength * rotary.rotaryDimensions / 2)
        sineTable.reserveCapacity(contextLength * rotary.rotaryDimensions / 2)
        for position in 0..<contextLength {
            let (c, s) = rotary.cosSin(position: position)
            cosineTable += c
            sineTable += s
        }
        cosines = try context.buffer(copying: cosineTable, label: "rope cosines")
        sines = try context.buffer(copying: sineTable, label: "rope sines")
        rotaryDimensions = rotary.rotaryDimensions
        // Split attention: chunks of a multiple of 64 keys, at most 64 of them (at 4,096 keys, 128-key
        // chunks measured faster than 64-key ones on an H200: 318 against 305 t/s). The kernel takes
        // up to 128 chunks and no more than its workgroup is wide (each chunk gets an invocation when
        // they are combined).
        let chunkLimit = min(128, splitWidth)
        let keysPerChunk = attentionKeysPerChunk ?? 64 * ((contextLength + 64 * 64 - 1) / (64 * 64))
        attentionChunkSize = max(keysPerChunk, (contextLength + chunkLimit - 1) / chunkLimit, 1)
        attentionChunks = (contextLength + attentionChunkSize - 1) / attentionChunkSize
        partials = try Buffer(device: context.device,
                              byteCount: splitTokens * config.headCount * attentionChunks * (config.headDimension + 4) * 4,
                              location: .deviceLocal, label: "attention partials")
        let counts = try Buffer(device: context.device, byteCount: splitTokens * config.headCount * 4, location: .deviceLocal,
                                label: "attention workgroups done")
        try counts.fill(0)
        finishedCounts = counts
        // Decode products wider than one staged chunk split over their chunks (one workgroup row per chunk).
        let productShapes = names.compactMap { weights.matrix($0) }.map { (rows: $0.rows, columns: $0.columns) }
        let maxRows = productShapes.map(\.rows).max() ?? 1
        let maxParts = productShapes.map { Self.parts(columns: $0.columns) }.max() ?? 1
        partSums = try Buffer(device: context.device, byteCount: maxRows * maxParts * 4, location: .deviceLocal,
                              label: "decode product part sums")
        let partCountBuffer = try Buffer(device: context.device, byteCount: maxRows * 4, location: .deviceLocal,
                                         label: "decode product parts finished")
        try partCountBuffer.fill(0)
        partCounts = partCountBuffer
        tokens = try Buffer(device: context.device, byteCount: tokenCapacity * 4, location: .hostWritten, label: "tokens")
        self.config = config
        self.contextLength = contextLength
    }

    public func makeTensor(rows: Int, columns: Int) throws -> BackendTensor {
        try GPUTensor(rows: rows, columns: columns, context: context)
    }

    // MARK: Operations

    public func embed(tokens ids: [Int32], into out: BackendTensor) throws {
        let (_, tokenBuffer) = try prepared()
        guard ids.count <= tokenCapacity else { throw BackendError.badRange(what: "tokens in one call", range: 0..<ids.count, limit: tokenCapacity) }
        if tokensUsed + ids.count > tokenCapacity { try flush() }
        let offset = tokensUsed
        ids.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress { (tokenBuffer.mapped! + offset * 4).copyMemory(from: base, byteCount: bytes.count) }
        }
        tokensUsed += ids.count
        let embedding = try matrix(.embedding)
        let pipeline = try context.pipeline(embedding.bits == 4 ? ShaderLibrary.embedQ4 : ShaderLibrary.embedQ8, bindings: 5,
                                            pushConstantSize: MemoryLayout<EmbedConstants>.size, specialization: [256])
        let total = ids.count * embedding.columns
        try dispatch(pipeline, [BufferBinding(tokenBuffer), BufferBinding(embedding.packed), BufferBinding(embedding.scales),
                                BufferBinding(embedding.biases), BufferBinding(try gpu(out).buffer)],
                     EmbedConstants(count: UInt32(ids.count), columns: UInt32(embedding.columns),
                                    groupSize: UInt32(embedding.groupSize), tokenOffset: UInt32(offset)),
                     groups: ((total + 255) / 256, 1, 1))
    }

    public func rmsNorm(_ x: BackendTensor, weight: WeightName, count: Int, into out: BackendTensor) throws {
        let (config, _) = try prepared()
        guard let weightBuffer = norms[weight] else { throw BackendError.unsupportedWeight(name: "\(weight)", reason: "not a norm weight") }
        let constants = RMSNormConstants(columns: UInt32(x.columns), rows: UInt32(count), epsilon: config.rmsNormEpsilon)
        let bindings = [BufferBinding(try gpu(x).buffer), BufferBinding(weightBuffer), BufferBinding(try gpu(out).buffer)]
        if let copy = try halfCopy(count: count, columns: x.columns) {
            let pipeline = try context.pipeline(ShaderLibrary.rmsNormHalf, bindings: 4, pushConstantSize: MemoryLayout<RMSNormConstants>.size,
                                                specialization: [UInt32(context.workgroupSize)])
            try dispatch(pipeline, bindings + [BufferBinding(copy.buffer)], constants, groups: (count, 1, 1))
            noteHalfCopy(of: out, rows: count)
            return
        }
        try dispatch(rmsNormKernel.pipeline, bindings, constants, groups: (count, 1, 1))
        if count == 1 {
            lastPrologue = QueuedPrologue(kind: .norm, index: stream.queued.count - 1, input: x, norm: weightBuffer, out: out)
        }
    }

    public func matmul(_ x: BackendTensor, rows: Range<Int>, weight: WeightName, into out: BackendTensor) throws {
        // A one-token RMSNorm or SiLU gate into `x` queued just before is fused into the product.
        var prologue: QueuedPrologue?
        if let queued = lastPrologue, queued.index == stream.queued.count - 1, queued.out === x, rows == 0..<1 {
            prologue = queued
        }
        try queueMatmul(x, rows: rows, weight: weight, into: out, accumulateInto: nil, prologue: prologue)
    }

    /// Queues out = x[rows] · Wᵀ, and with `accumulator` also accumulator += out (the residual add
    /// fused into the product's epilogue). Decode-sized products use the matvec kernel. With
    /// `prologue`, the one-token operation that wrote x, still queued just before, is computed by
    /// the product itself and its own dispatch dropped (when the decode kernel can take it).
    private func queueMatmul(_ x: BackendTensor, rows: Range<Int>, weight: WeightName, into out: BackendTensor,
                             accumulateInto accumulator: BackendTensor?, prologue: QueuedPrologue?) throws {
        let w = try matrix(weight)
        guard x.columns == w.columns, out.columns >= w.rows, rows.upperBound <= x.rows else {
            throw BackendError.badRange(what: "matmul \(weight) of (\(x.rows), \(x.columns)) into (\(out.rows), \(out.columns))",
                                        range: rows, limit: x.rows)
        }
        if rows.count == 1 {
            var fused = prologue
            let parts = Self.parts(columns: w.columns)
            var kernel = MatvecKernel.choose(bits: w.bits, columns: w.columns, groupSize: w.groupSize, accumulate: accumulator != nil,
                                             prologue: fused?.kind ?? .none, rows: w.rows, parts: parts, settings: decodeProducts,
                                             device: context.device)
            if kernel == nil, fused != nil {
                fused = nil
                kernel = MatvecKernel.choose(bits: w.bits, columns: w.columns, groupSize: w.groupSize, accumulate: accumulator != nil,
                                             rows: w.rows, parts: parts, settings: decodeProducts, device: context.device)
            }
            if let kernel {
                try queueMatvec(kernel, x: x, rows: rows, weight: weight, w: w, into: out, accumulateInto: accumulator, prologue: fused)
                return
            }
        }
        let subgroup = context.device.physical.subgroupSize
        let bindings = [BufferBinding(try gpu(x).buffer), BufferBinding(w.packed), BufferBinding(w.scales), BufferBinding(w.biases),
                        BufferBinding(try gpu(out).buffer)]
        let constants = MatmulConstants(rows: UInt32(w.rows), columns: UInt32(w.columns), tokens: UInt32(rows.count),
                                        inputRow: UInt32(rows.lowerBound), groupSize: UInt32(w.groupSize), outputStride: UInt32(out.columns))
        let start = stream.queued.count
        if try queuePrefillMatmul(x, rows: rows, weight: w, into: out, accumulateInto: accumulator) {
            if accumulator == nil {  // for `add` to re-queue with the sum fused
                lastProduct = QueuedProduct(index: stream.queued.count - 1, x: x, rows: rows, weight: weight, out: out,
                                            prologue: nil, commands: stream.queued.count - start)
            }
            return
        }
        let tokensPerGroup = 8
        let shader = w.bits == 4 ? ShaderLibrary.matmulQ4 : ShaderLibrary.matmulQ8
        let rowsPerGroup = max(1, min(4, context.workgroupSize / subgroup))
        let pipeline = try context.pipeline(shader, bindings: 5, pushConstantSize: MemoryLayout<MatmulConstants>.size,
                                            specialization: [UInt32(rowsPerGroup * subgroup)])
        try dispatch(pipeline, bindings, constants,
                     groups: ((w.rows + rowsPerGroup - 1) / rowsPerGroup, (rows.count + tokensPerGroup - 1) / tokensPerGroup, 1))
        lastProduct = nil
        if let accumulator { try queueAdd(out, count: rows.count, into: accumulator) }
    }

    /// Queues the decode product with `kernel`, dropping the fused prologue's own dispatch.
    private func queueMatvec(_ kernel: MatvecKernel, x: BackendTensor, rows: Range<Int>, weight: WeightName, w: GPUMatrix,
                             into out: BackendTensor, accumulateInto accumulator: BackendTensor?, prologue: QueuedPrologue?) throws {
        let (config, _) = try prepared()
        if let prologue, prologue.index == stream.queued.count - 1 {
            stream.removeLast()
        }
        let subgroup = context.device.physical.subgroupSize
        let subgroupsPerGroup = max(1, min(kernel.subgroups, context.device.physical.maxWorkgroupInvocations / subgroup))
        let rowsPerGroup = subgroupsPerGroup * kernel.rowsPerSubgroup
        let input = try gpu(prologue?.input ?? x).buffer
        var bindings = [BufferBinding(input), BufferBinding(w.packed), BufferBinding(w.scales), BufferBinding(w.biases),
                        BufferBinding(try gpu(out).buffer), BufferBinding(try accumulator.map { try gpu($0).buffer } ?? gpu(out).buffer)]
        let staged = !kernel.specialization.isEmpty
        if staged {  // the staged kernel: norm weight, the prologue's output, and the buffers of split products
            guard let partSums, let partCounts else { throw BackendError.notPrepared }
            bindings += [BufferBinding(prologue?.norm ?? input), BufferBinding(try gpu(x).buffer), BufferBinding(partSums),
                         BufferBinding(partCounts)]
        }
        let pipeline = try context.pipeline(kernel.shader, bindings: bindings.count, pushConstantSize: MemoryLayout<MatvecConstants>.size,
                                            specialization: [UInt32(subgroupsPerGroup * subgroup)] + kernel.specialization)
        try dispatch(pipeline, bindings,
                     MatvecConstants(rows: UInt32(w.rows), columns: UInt32(w.columns), tokens: 1, inputRow: UInt32(rows.lowerBound),
                                     groupSize: UInt32(w.groupSize), outputStride: UInt32(out.columns), epsilon: config.rmsNormEpsilon),
                     groups: ((w.rows + rowsPerGroup - 1) / rowsPerGroup, staged ? Self.parts(columns: w.columns) : 1, 1))
        if accumulator == nil {
            lastProduct = QueuedProduct(index: stream.queued.count - 1, x: x, rows: rows, weight: weight, out: out, prologue: prologue)
        }
    }

    /// Parts a staged decode product of `columns` columns is split into: one per chunk of x it stages
    /// (down at Phi-3.5-mini's shapes: 2), unless `PHI_GPU_MATVEC_SPLIT=0`.
    static func parts(columns: Int) -> Int {
        splitProducts ? (columns + MatvecKernel.stagedChunk - 1) / MatvecKernel.stagedChunk : 1
    }
    private static let splitProducts = ProcessInfo.processInfo.environment["PHI_GPU_MATVEC_SPLIT"] != "0"

    public func siluGate(_ gateUp: BackendTensor, count: Int, into out: BackendTensor) throws {
        if let copy = try halfCopy(count: count, columns: out.columns) {
            let pipeline = try context.pipeline(ShaderLibrary.siluGateHalf, bindings: 3, pushConstantSize: MemoryLayout<ElementwiseConstants>.size,
                                                specialization: [256])
            try dispatch(pipeline, [BufferBinding(try gpu(gateUp).buffer), BufferBinding(try gpu(out).buffer), BufferBinding(copy.buffer)],
                         ElementwiseConstants(count: UInt32(count), width: UInt32(out.columns)),
                         groups: ((count * out.columns / 4 + 255) / 256, 1, 1))
            noteHalfCopy(of: out, rows: count)
            return
        }
        try elementwise(ShaderLibrary.siluGate, gateUp, out, count: count, width: out.columns)
        if count == 1, gateUp.columns == 2 * out.columns {
            lastPrologue = QueuedPrologue(kind: .silu, index: stream.queued.count - 1, input: gateUp, norm: nil, out: out)
        }
    }

    public func add(_ x: BackendTensor, count: Int, into accumulator: BackendTensor) throws {
        // A product into `x` queued just before is re-queued to add into `accumulator` itself.
        if let product = lastProduct, product.index == stream.queued.count - 1, product.out === x, product.rows.count == count,
           accumulator.columns == x.columns, accumulator !== product.x, accumulator !== product.prologue?.input {
            for _ in 0..<product.commands { stream.removeLast() }
            try queueMatmul(product.x, rows: product.rows, weight: product.weight, into: product.out, accumulateInto: accumulator,
                            prologue: product.prologue)
            return
        }
        try queueAdd(x, count: count, into: accumulator)
    }

    func queueAdd(_ x: BackendTensor, count: Int, into accumulator: BackendTensor) throws {
        try elementwise(ShaderLibrary.add, accumulator, x, count: count, width: x.columns)
    }

    public func read(_ tensor: BackendTensor, rows: Range<Int>) throws -> [Float] {
        guard rows.upperBound <= tensor.rows else { throw BackendError.badRange(what: "read", range: rows, limit: tensor.rows) }
        let byteCount = rows.count * tensor.columns * 4
        if readback == nil || readback!.byteCount < byteCount {
            readback = try Buffer(device: context.device, byteCount: byteCount, location: .hostVisible, label: "read-back")
        }
        let staging = readback!
        try stream.append(.copy(source: try gpu(tensor).buffer, destination: staging, byteCount: byteCount,
                                sourceOffset: rows.lowerBound * tensor.columns * 4), fullBarriers: fullBarriers)
        try flush()
        return try staging.read(Float.self, count: rows.count * tensor.columns)
    }

    // MARK: Recording

    private func elementwise(_ shader: ShaderBinary, _ first: BackendTensor, _ second: BackendTensor, count: Int, width: Int) throws {
        let pipeline = try context.pipeline(shader, bindings: 2, pushConstantSize: MemoryLayout<ElementwiseConstants>.size,
                                            specialization: [256])
        try dispatch(pipeline, [BufferBinding(try gpu(first).buffer), BufferBinding(try gpu(second).buffer)],
                     ElementwiseConstants(count: UInt32(count), width: UInt32(width)), groups: ((count * width + 255) / 256, 1, 1))
    }

    func dispatch<Constants>(_ pipeline: ComputePipeline, _ buffers: [BufferBinding], _ constants: Constants,
                                     groups: (Int, Int, Int)) throws {
        lastProduct = nil
        lastPrologue = nil
        lastRotation = nil
        let set = try context.descriptorSet(for: pipeline, buffers: buffers)
        var value = constants
        let bytes = withUnsafeBytes(of: &value) { Array($0) }
        try stream.append(.dispatch(pipeline: pipeline, set: set, constants: bytes, groups: Groups(x: groups.0, y: groups.1, z: groups.2)),
                          fullBarriers: fullBarriers)
    }

    /// Stores a per-step value where the shaders read it; returns its slot for the push constants.
    func parameterSlot(_ value: UInt32) throws -> UInt32 {
        if parametersUsed == parameterCapacity { try flush() }
        parameters.mapped!.storeBytes(of: value, toByteOffset: parametersUsed * 4, as: UInt32.self)
        parametersUsed += 1
        return UInt32(parametersUsed - 1)
    }

    /// Barriers between this step's commands: full ones for prompts, which measured steadier for
    /// them on an H100 (pp512 2,700 ± 95 against 2,490 ± 690 t/s), compute-to-compute ones (the
    /// transfer stage only before a copy) for decode steps. `PHI_GPU_BARRIER=full` forces full ones.
    private var fullBarriers: Bool {
        Self.forceFullBarriers || tokensUsed > splitTokens
    }
    private static let forceFullBarriers = ProcessInfo.processInfo.environment["PHI_GPU_BARRIER"] == "full"

    /// Runs everything queued and waits for it (segments may already be running).
    private func flush() throws {
        defer {
            lastProduct = nil
            lastPrologue = nil
            lastRotation = nil
            lastHalfCopy = nil
            tokensUsed = 0
            parametersUsed = 0
        }
        try stream.finish(fullBarriers: fullBarriers)
    }

    func prepared() throws -> (ModelConfig, Buffer) {
        guard let config, let tokens else { throw BackendError.notPrepared }
        return (config, tokens)
    }

    private func matrix(_ name: WeightName) throws -> GPUMatrix {
        guard let matrix = matrices[name] else { throw BackendError.unsupportedWeight(name: "\(name)", reason: "not a matrix of this model") }
        return matrix
    }

    func gpu(_ tensor: BackendTensor) throws -> GPUTensor {
        guard let tensor = tensor as? GPUTensor else {
            throw BackendError.unsupportedWeight(name: "tensor", reason: "not made by the GPU backend")
        }
        return tensor
    }

    func checkPositions(_ start: Int, _ count: Int) throws {
        try BackendError.checkPositions(start, count, limit: contextLength)
    }
}
