import Foundation
import PhiShaders
import VulkanKit

/// The GPU phi-gpu runs on: the Vulkan instance and device, a descriptor pool, and the compute
/// pipelines built so far (one per shader variant and specialization), created on first use.
public final class GPUContext: @unchecked Sendable {
    public let instance: Instance
    public let device: Device
    /// Workgroup size of the 1-D kernels: a multiple of the subgroup size, at most 256.
    public let workgroupSize: Int
    private let lock = NSLock()
    private var pipelines: [PipelineKey: ComputePipeline] = [:]
    private var pools: [DescriptorPool] = []
    private var setsLeftInPool = 0
    private var descriptorSets: [DescriptorKey: DescriptorSet] = [:]

    /// A pipeline is reused for the same shader variant and specialization constants.
    private struct PipelineKey: Hashable {
        var name: String
        var specialization: [UInt32]
    }

    /// A descriptor set is reused for the same pipeline and buffers (the set keeps them alive, so
    /// their identities cannot be reused by other buffers): the pipeline's identity, then each
    /// binding's buffer identity, offset and range, in one array.
    private struct DescriptorKey: Hashable {
        var words: [Int]
    }

    /// Opens the device chosen by `DeviceSelection` (`deviceIndex`, else `$PHI_GPU_DEVICE`, else
    /// the most capable kind). `allowCPUDevices` admits software devices such as llvmpipe, as the
    /// tests do; otherwise a CPU-type device is refused, so the caller can use the CPU backend.
    public init(deviceIndex: Int? = nil, allowCPUDevices: Bool = false, validation: Bool? = nil) throws {
        let instance = try Instance(validation: validation)
        let devices = try instance.physicalDevices()
        guard let chosen = try DeviceSelection.choose(from: devices, requested: deviceIndex) else {
            throw GPUUnavailable(reason: "no Vulkan device found")
        }
        if chosen.kind == .cpu && !allowCPUDevices && deviceIndex == nil {
            throw GPUUnavailable(reason: "the only Vulkan device is the software renderer \(chosen.name)")
        }
        self.instance = instance
        self.device = try Device(physical: chosen)
        let subgroup = max(chosen.subgroupSize, 1)
        self.workgroupSize = max(subgroup, min(256, chosen.maxWorkgroupInvocations) / subgroup * subgroup)
    }

    /// The pipeline for `shader` with `specialization` constants, built once and cached.
    public func pipeline(_ shader: ShaderBinary, bindings: Int, pushConstantSize: Int,
                         specialization: [UInt32]) throws -> ComputePipeline {
        let key = PipelineKey(name: shader.name, specialization: specialization)
        return try lock.withLock {
            if let existing = pipelines[key] { return existing }
            let made = try ComputePipeline(device: device, name: shader.name, spirv: shader.words, bindingCount: bindings,
                                           pushConstantSize: pushConstantSize, specialization: specialization)
            pipelines[key] = made
            let statistics = try made.statistics()
            if !statistics.isEmpty { // PHI_GPU_SHADER_STATISTICS=1
                let constants = specialization.isEmpty ? "" : " \(specialization)"
                FileHandle.standardError.write(Data("phi-gpu: shader \(shader.name)\(constants): \(statistics.joined(separator: ", "))\n".utf8))
            }
            return made
        }
    }

    /// The descriptor set binding `buffers` to `pipeline`: made once from a pool grown as needed,
    /// then reused.
    public func descriptorSet(for pipeline: ComputePipeline, buffers: [BufferBinding]) throws -> DescriptorSet {
        var words = [Int](repeating: 0, count: 1 + 3 * buffers.count)
        words[0] = Int(bitPattern: UInt(bitPattern: ObjectIdentifier(pipeline)))
        for (index, binding) in buffers.enumerated() {
            words[1 + 3 * index] = Int(bitPattern: UInt(bitPattern: ObjectIdentifier(binding.buffer)))
            words[2 + 3 * index] = binding.offset
            words[3 + 3 * index] = binding.range ?? -1
        }
        let key = DescriptorKey(words: words)
        return try lock.withLock {
            if let existing = descriptorSets[key] { return existing }
            if setsLeftInPool == 0 || pools.isEmpty {
                pools.append(try DescriptorPool(device: device, maxSets: 256, maxBuffers: 256 * 8))
                setsLeftInPool = 256
            }
            setsLeftInPool -= 1
            let set = try DescriptorSet(pool: pools[pools.count - 1], pipeline: pipeline, bindings: buffers)
            descriptorSets[key] = set
            return set
        }
    }

    /// A device-local buffer of `count` elements of `T` (label names it in errors).
    public func buffer<T>(_ type: T.Type, count: Int, label: String) throws -> Buffer {
        try Buffer(device: device, byteCount: count * MemoryLayout<T>.stride, location: .deviceLocal, label: label)
    }

    /// A device-local buffer holding a copy of `array`.
    public func buffer<T>(copying array: [T], label: String) throws -> Buffer {
        let made = try buffer(T.self, count: array.count, label: label)
        try made.upload(array)
        return made
    }
}

/// No GPU phi-gpu can use: the reason, so the caller can say it and fall back to the CPU.
public struct GPUUnavailable: Error, CustomStringConvertible {
    public let reason: String
    public var description: String { "no usable GPU: \(reason)" }
}
