import CVulkan

/// A pool of descriptor sets of storage buffers. Sets allocated from it live as long as the pool.
public final class DescriptorPool: @unchecked Sendable {
    public let handle: VkDescriptorPool
    let device: Device

    public init(device: Device, maxSets: Int, maxBuffers: Int) throws {
        self.device = device
        var size = VkDescriptorPoolSize(type: VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount: UInt32(maxBuffers))
        var info = VkDescriptorPoolCreateInfo()
        info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO
        info.maxSets = UInt32(maxSets)
        info.poolSizeCount = 1
        var pool: VkDescriptorPool?
        try withUnsafePointer(to: &size) { sizePointer in
            info.pPoolSizes = sizePointer
            try check(vkCreateDescriptorPool(device.handle, &info, nil, &pool), "vkCreateDescriptorPool")
        }
        guard let pool else { throw VulkanError(call: "vkCreateDescriptorPool", message: "returned no pool") }
        handle = pool
    }

    deinit { vkDestroyDescriptorPool(device.handle, handle, nil) }
}

/// The buffers bound to one pipeline's bindings 0..<n, as one descriptor set.
public final class DescriptorSet: @unchecked Sendable {
    public let handle: VkDescriptorSet
    /// Keeps the pool and the bound buffers alive while the set may be used.
    let pool: DescriptorPool
    private var buffers: [Buffer] = []

    /// Allocates a set for `pipeline` from `pool` and binds `bindings[i]` to binding `i`
    /// (the whole buffer, or `range` bytes at `offset`).
    public init(pool: DescriptorPool, pipeline: ComputePipeline, bindings: [BufferBinding]) throws {
        self.pool = pool
        guard bindings.count == pipeline.bindingCount else {
            throw VulkanError(call: "descriptor set for \(pipeline.name)", message:
                "\(bindings.count) buffers given for \(pipeline.bindingCount) bindings")
        }
        var layout: VkDescriptorSetLayout? = pipeline.setLayout
        var info = VkDescriptorSetAllocateInfo()
        info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO
        info.descriptorPool = pool.handle
        info.descriptorSetCount = 1
        var set: VkDescriptorSet?
        try withUnsafePointer(to: &layout) { layoutPointer in
            info.pSetLayouts = layoutPointer
            try check(vkAllocateDescriptorSets(pool.device.handle, &info, &set), "vkAllocateDescriptorSets(\(pipeline.name))")
        }
        guard let set else { throw VulkanError(call: "vkAllocateDescriptorSets", message: "returned no set") }
        handle = set
        try update(bindings)
    }

    /// Points the set's bindings at other buffers (only while no submitted work uses it).
    public func update(_ bindings: [BufferBinding]) throws {
        var infos = bindings.map { binding in
            VkDescriptorBufferInfo(buffer: binding.buffer.handle, offset: VkDeviceSize(binding.offset),
                                   range: binding.range.map { VkDeviceSize($0) } ?? VkDeviceSize(VK_WHOLE_SIZE))
        }
        infos.withUnsafeMutableBufferPointer { infoPointer in
            var writes = infoPointer.indices.map { index -> VkWriteDescriptorSet in
                var write = VkWriteDescriptorSet()
                write.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
                write.dstSet = handle
                write.dstBinding = UInt32(index)
                write.descriptorCount = 1
                write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                write.pBufferInfo = UnsafePointer(infoPointer.baseAddress! + index)
                return write
            }
            vkUpdateDescriptorSets(pool.device.handle, UInt32(writes.count), &writes, 0, nil)
        }
        buffers = bindings.map(\.buffer)
    }
}

/// A buffer (or a byte range of one) bound to a shader binding.
public struct BufferBinding: Sendable {
    public var buffer: Buffer
    public var offset: Int
    /// Bytes from `offset`; `nil` for the rest of the buffer.
    public var range: Int?

    public init(_ buffer: Buffer, offset: Int = 0, range: Int? = nil) {
        self.buffer = buffer
        self.offset = offset
        self.range = range
    }
}
