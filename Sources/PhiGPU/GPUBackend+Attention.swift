import PhiModel
import PhiShaders
import VulkanKit

extension GPUBackend {
    /// RoPE of the queries and keys of `count` tokens from `startPosition`, with the keys and values
    /// written to layer `layer`'s cache (rope_cache.comp); a decode step's is taken over by the split
    /// attention that follows it.
    public func rotateAndCache(qkv: BackendTensor, layer: Int, startPosition: Int, count: Int, queries: BackendTensor) throws {
        let (config, _) = try prepared()
        try checkPositions(startPosition, count)
        guard let cosines, let sines else { throw BackendError.notPrepared }
        // 4 dims an invocation where each group of 4 lies on one side of the rotation's halves.
        let vec4 = config.headDimension % 4 == 0 && rotaryDimensions % 8 == 0
        let pipeline = try context.pipeline(vec4 ? ShaderLibrary.ropeCacheVec4 : ShaderLibrary.ropeCache, bindings: 7,
                                            pushConstantSize: MemoryLayout<RopeConstants>.size, specialization: [256])
        let slot = try parameterSlot(UInt32(startPosition))
        let total = count * (config.headCount + 2 * config.kvHeadCount) * config.headDimension / (vec4 ? 4 : 2)
        try dispatch(pipeline, [BufferBinding(try gpu(qkv).buffer), BufferBinding(cosines), BufferBinding(sines),
                                BufferBinding(try gpu(queries).buffer), BufferBinding(keyCache[layer]), BufferBinding(valueCache[layer]),
                                BufferBinding(parameters)],
                     RopeConstants(count: UInt32(count), positionSlot: slot, heads: UInt32(config.headCount),
                                   kvHeads: UInt32(config.kvHeadCount), headDimension: UInt32(config.headDimension),
                                   rotary: UInt32(rotaryDimensions), context: UInt32(contextLength)),
                     groups: ((total + 255) / 256, 1, 1))
        if count <= splitTokens {
            lastRotation = QueuedRotation(index: stream.queued.count - 1, qkv: qkv, queries: queries, layer: layer,
                                          startPosition: startPosition, count: count)
        }
    }

    /// Causal attention of `count` queries over the cache up to their positions: split over the keys
    /// for decode steps (attention_split.comp, reading the Float16 cache 8 values at a time); for
    /// prompts, tiles of queries on cooperative matrices where the device has them
    /// (attention_coopmat.comp), else in Float32 (attention.comp).
    public func attention(queries: BackendTensor, layer: Int, startPosition: Int, count: Int, into out: BackendTensor) throws {
        let (config, _) = try prepared()
        try checkPositions(startPosition, count)
        let physical = context.device.physical
        let split = count <= splitTokens && config.headDimension % 8 == 0 && splitWidth >= config.headDimension / 8
            && physical.subgroupSize >= 8 && splitWidth % 8 == 0
        let prompt = split ? nil : try PromptAttention.choose(device: context.device, headDimension: config.headDimension,
                                                             forced: promptAttentionKind)
        let slot = try parameterSlot(UInt32(startPosition))
        guard let partials, let finishedCounts, let cosines, let sines else { throw BackendError.notPrepared }
        let constants = AttentionConstants(count: UInt32(count), positionSlot: slot, heads: UInt32(config.headCount),
                                           kvHeads: UInt32(config.kvHeadCount), headDimension: UInt32(config.headDimension),
                                           context: UInt32(contextLength), scale: 1 / Float(config.headDimension).squareRoot(),
                                           chunkSize: UInt32(attentionChunkSize), chunks: UInt32(attentionChunks),
                                           rotary: UInt32(rotaryDimensions))
        let caches = [BufferBinding(keyCache[layer]), BufferBinding(valueCache[layer])]
        if let prompt {
            let cooperative = prompt.kind != .scalar
            var bindings = [BufferBinding(try gpu(queries).buffer)] + caches + [BufferBinding(try gpu(out).buffer), BufferBinding(parameters)]
            let groups = (count + prompt.queries - 1) / prompt.queries
            var promptConstants = constants
            let paired = cooperative && PromptAttention.pairs(groups: groups, heads: config.headCount, startPosition: startPosition,
                                                              queries: prompt.queries, multiprocessors: physical.multiprocessors)
            promptConstants.chunks = paired ? 1 : 0
            // The cooperative kernel also writes its output in Float16 for the product that reads it
            // (chunkSize 1), instead of a conversion dispatch.
            let copy = cooperative ? try halfCopy(count: count, columns: out.columns) : nil
            promptConstants.chunkSize = copy == nil ? 0 : 1
            if cooperative { bindings.append(BufferBinding(try copy?.buffer ?? gpu(out).buffer)) }
            let pipeline = try context.pipeline(prompt.shader, bindings: bindings.count, pushConstantSize: MemoryLayout<AttentionConstants>.size,
                                                specialization: [UInt32(cooperative ? config.headDimension / 16 : prompt.threads)])
            try dispatch(pipeline, bindings, promptConstants, groups: (paired ? (groups + 1) / 2 : groups, config.headCount, 1))
            if copy != nil { noteHalfCopy(of: out, rows: count) }
            return
        }
        // The RoPE-and-cache queued just before for these queries is done by the attention itself.
        let rotation = lastRotation.flatMap { queued in
            queued.index == stream.queued.count - 1 && queued.queries === queries && queued.layer == layer
                && queued.startPosition == startPosition && queued.count == count ? queued : nil
        }
        if rotation != nil { stream.removeLast() }
        let input = try gpu(rotation?.qkv ?? queries).buffer
        var bindings = [BufferBinding(input)] + caches + [BufferBinding(partials), BufferBinding(parameters), BufferBinding(try gpu(out).buffer),
                                                          BufferBinding(finishedCounts)]
        if rotation != nil {
            bindings += [BufferBinding(cosines), BufferBinding(sines), BufferBinding(try gpu(queries).buffer)]
        }
        let pipeline = try context.pipeline(rotation != nil ? ShaderLibrary.attentionSplitRope : ShaderLibrary.attentionSplit,
                                            bindings: bindings.count, pushConstantSize: MemoryLayout<AttentionConstants>.size,
                                            specialization: [UInt32(splitWidth)])
        try dispatch(pipeline, bindings, constants, groups: (attentionChunks, config.headCount, count))
    }
}
