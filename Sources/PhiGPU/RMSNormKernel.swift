import PhiShaders
import VulkanKit

/// Push constants of `Shaders/rms_norm.comp` (its `RMSNormConstants` block).
public struct RMSNormConstants: Sendable {
    public var columns: UInt32
    public var rows: UInt32
    public var epsilon: Float
}

/// RMSNorm on the GPU: `y = x / sqrt(mean(x²) + ε) · weight` for each row, one workgroup a row.
public struct RMSNormKernel {
    let context: GPUContext
    /// The RMSNorm pipeline at this context's workgroup size.
    public let pipeline: ComputePipeline

    public init(context: GPUContext) throws {
        self.context = context
        pipeline = try context.pipeline(ShaderLibrary.rmsNorm, bindings: 3,
                                        pushConstantSize: MemoryLayout<RMSNormConstants>.size,
                                        specialization: [UInt32(context.workgroupSize)])
    }

    /// Records the kernel: `input` (rows, columns) Float32, `weight` (columns) Float32 → `output` (rows, columns).
    public func record(into commands: CommandBuffer, input: Buffer, weight: Buffer, output: Buffer,
                       rows: Int, columns: Int, epsilon: Float) throws {
        let set = try context.descriptorSet(for: pipeline, buffers: [BufferBinding(input), BufferBinding(weight), BufferBinding(output)])
        commands.dispatch(pipeline, set: set,
                          constants: RMSNormConstants(columns: UInt32(columns), rows: UInt32(rows), epsilon: epsilon),
                          groups: (rows, 1, 1))
    }
}
