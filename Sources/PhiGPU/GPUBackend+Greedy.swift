import PhiModel
import PhiShaders
import VulkanKit

extension GPUBackend {
    /// The index of the largest value of row `row` of `tensor` (the first of equal ones), found on
    /// the GPU (Shaders/argmax.comp) so that greedy decoding reads back 4 bytes instead of a row of
    /// logits (Phi-4-mini: 800 KB a token).
    public func argmax(_ tensor: BackendTensor, row: Int) throws -> Int32 {
        guard row >= 0, row < tensor.rows else { throw BackendError.badRange(what: "argmax row", range: row..<row + 1, limit: tensor.rows) }
        let result = try argmaxResult ?? GPUTensor(rows: 1, columns: 1, context: context)
        argmaxResult = result
        let width = min(256, context.device.physical.maxWorkgroupInvocations)
        let pipeline = try context.pipeline(ShaderLibrary.argmax, bindings: 2, pushConstantSize: MemoryLayout<ArgmaxConstants>.size,
                                            specialization: [UInt32(width)])
        try dispatch(pipeline, [BufferBinding(try gpu(tensor).buffer), BufferBinding(result.buffer)],
                     ArgmaxConstants(count: UInt32(tensor.columns), offset: UInt32(row * tensor.columns)), groups: (1, 1, 1))
        let bits = try read(result, rows: 0..<1)[0].bitPattern
        return Int32(bitPattern: bits)
    }
}
