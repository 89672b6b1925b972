import CVulkan

/// A pool that command buffers for the device's compute queue are allocated from.
public final class CommandPool: @unchecked Sendable {
    public let handle: VkCommandPool
    let device: Device

    public init(device: Device) throws {
        self.device = device
        var info = VkCommandPoolCreateInfo()
        info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO
        info.flags = VkCommandPoolCreateFlags(VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT.rawValue)
        info.queueFamilyIndex = device.queueFamily
        var pool: VkCommandPool?
        try check(vkCreateCommandPool(device.handle, &info, nil, &pool), "vkCreateCommandPool")
        guard let pool else { throw VulkanError(call: "vkCreateCommandPool", message: "returned no pool") }
        handle = pool
    }

    deinit { vkDestroyCommandPool(device.handle, handle, nil) }
}

/// A primary command buffer. Record it once (`begin` … `end`) and submit it as many times as
/// needed; what it binds is kept alive with it.
public final class CommandBuffer: @unchecked Sendable {
    public let handle: VkCommandBuffer
    let pool: CommandPool
    private var retained: [AnyObject] = []

    public init(pool: CommandPool) throws {
        self.pool = pool
        var info = VkCommandBufferAllocateInfo()
        info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO
        info.commandPool = pool.handle
        info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY
        info.commandBufferCount = 1
        var buffer: VkCommandBuffer?
        try check(vkAllocateCommandBuffers(pool.device.handle, &info, &buffer), "vkAllocateCommandBuffers")
        guard let buffer else { throw VulkanError(call: "vkAllocateCommandBuffers", message: "returned no buffer") }
        handle = buffer
    }

    deinit {
        var buffer: VkCommandBuffer? = handle
        vkFreeCommandBuffers(pool.device.handle, pool.handle, 1, &buffer)
    }

    /// Starts (re-)recording; anything recorded before is discarded.
    public func begin() throws {
        retained.removeAll()
        try check(vkResetCommandBuffer(handle, 0), "vkResetCommandBuffer")
        var info = VkCommandBufferBeginInfo()
        info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO
        try check(vkBeginCommandBuffer(handle, &info), "vkBeginCommandBuffer")
    }

    public func end() throws { try check(vkEndCommandBuffer(handle), "vkEndCommandBuffer") }

    /// Binds `pipeline` and `set`, pushes `constants` and dispatches `groups` workgroups.
    public func dispatch<Constants>(_ pipeline: ComputePipeline, set: DescriptorSet, constants: Constants,
                                    groups: (x: Int, y: Int, z: Int)) {
        var value = constants
        let bytes = withUnsafeBytes(of: &value) { Array($0) }
        dispatch(pipeline, set: set, constantBytes: bytes, groups: groups)
    }

    /// Binds `pipeline` and `set`, pushes the push-constant bytes and dispatches `groups` workgroups.
    public func dispatch(_ pipeline: ComputePipeline, set: DescriptorSet, constantBytes: [UInt8],
                         groups: (x: Int, y: Int, z: Int)) {
        precondition(constantBytes.count == pipeline.pushConstantSize,
                     "push constants for \(pipeline.name) are \(constantBytes.count) bytes, expected \(pipeline.pushConstantSize)")
        retained.append(pipeline)
        retained.append(set)
        vkCmdBindPipeline(handle, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.handle)
        var setHandle: VkDescriptorSet? = set.handle
        vkCmdBindDescriptorSets(handle, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout, 0, 1, &setHandle, 0, nil)
        if pipeline.pushConstantSize > 0 {
            constantBytes.withUnsafeBytes { bytes in
                vkCmdPushConstants(handle, pipeline.layout, VkShaderStageFlags(VK_SHADER_STAGE_COMPUTE_BIT.rawValue),
                                   0, UInt32(bytes.count), bytes.baseAddress)
            }
        }
        vkCmdDispatch(handle, UInt32(groups.x), UInt32(groups.y), UInt32(groups.z))
    }

    /// Makes every earlier shader or transfer write visible to every later shader or transfer.
    public func barrier() {
        barrier(from: [.compute, .transfer], to: [.compute, .transfer])
    }

    /// The pipeline stages a barrier waits on or holds back.
    public struct Stages: OptionSet, Sendable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        public static let compute = Stages(rawValue: 1)
        public static let transfer = Stages(rawValue: 2)
    }

    /// Makes the writes of the `from` stages of earlier commands visible to the `to` stages of
    /// later ones (a compute-to-compute barrier between dependent dispatches is the cheapest).
    public func barrier(from: Stages, to: Stages) {
        func flags(_ stages: Stages) -> VkPipelineStageFlags {
            VkPipelineStageFlags((stages.contains(.compute) ? VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT.rawValue : 0)
                | (stages.contains(.transfer) ? VK_PIPELINE_STAGE_TRANSFER_BIT.rawValue : 0))
        }
        var memory = VkMemoryBarrier()
        memory.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER
        memory.srcAccessMask = VkAccessFlags((from.contains(.compute) ? VK_ACCESS_SHADER_WRITE_BIT.rawValue : 0)
            | (from.contains(.transfer) ? VK_ACCESS_TRANSFER_WRITE_BIT.rawValue : 0))
        memory.dstAccessMask = VkAccessFlags(
            (to.contains(.compute) ? VK_ACCESS_SHADER_READ_BIT.rawValue | VK_ACCESS_SHADER_WRITE_BIT.rawValue : 0)
            | (to.contains(.transfer) ? VK_ACCESS_TRANSFER_READ_BIT.rawValue | VK_ACCESS_TRANSFER_WRITE_BIT.rawValue : 0))
        vkCmdPipelineBarrier(handle, flags(from), flags(to), 0, 1, &memory, 0, nil, 0, nil)
    }

    /// Copies `byteCount` bytes between buffers.
    public func copy(from source: Buffer, to destination: Buffer, byteCount: Int, sourceOffset: Int = 0, destinationOffset: Int = 0) {
        retained.append(source)
        retained.append(destination)
        var region = VkBufferCopy(srcOffset: VkDeviceSize(sourceOffset), dstOffset: VkDeviceSize(destinationOffset),
                                  size: VkDeviceSize(byteCount))
        vkCmdCopyBuffer(handle, source.handle, destination.handle, 1, &region)
    }

    /// Fills `buffer` with a repeated 32-bit pattern.
    public func fill(_ buffer: Buffer, with pattern: UInt32) {
        retained.append(buffer)
        vkCmdFillBuffer(handle, buffer.handle, 0, VkDeviceSize(VK_WHOLE_SIZE), pattern)
    }

    /// Resets the queries of `pool` (required before writing timestamps into them).
    public func reset(_ pool: TimestampQueryPool) {
        retained.append(pool)
        vkCmdResetQueryPool(handle, pool.handle, 0, UInt32(pool.count))
    }

    /// Writes a GPU timestamp into query `index` once all earlier work has finished.
    public func writeTimestamp(_ pool: TimestampQueryPool, index: Int) {
        retained.append(pool)
        vkCmdWriteTimestamp(handle, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool.handle, UInt32(index))
    }
}

/// Timestamp queries, read back as nanoseconds.
public final class TimestampQueryPool: @unchecked Sendable {
    public let handle: VkQueryPool
    public let count: Int
    let device: Device

    public init(device: Device, count: Int) throws {
        self.device = device
        self.count = count
        var info = VkQueryPoolCreateInfo()
        info.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO
        info.queryType = VK_QUERY_TYPE_TIMESTAMP
        info.queryCount = UInt32(count)
        var pool: VkQueryPool?
        try check(vkCreateQueryPool(device.handle, &info, nil, &pool), "vkCreateQueryPool")
        guard let pool else { throw VulkanError(call: "vkCreateQueryPool", message: "returned no pool") }
        handle = pool
    }

    deinit { vkDestroyQueryPool(device.handle, handle, nil) }

    /// The first `first` timestamps (all by default), in nanoseconds; waits for them, so each of
    /// them must have been written.
    public func nanoseconds(first: Int? = nil) throws -> [Double] {
        let count = min(first ?? self.count, self.count)
        var ticks = [UInt64](repeating: 0, count: count)
        let flags = VkQueryResultFlags(VK_QUERY_RESULT_64_BIT.rawValue | VK_QUERY_RESULT_WAIT_BIT.rawValue)
        try ticks.withUnsafeMutableBytes { bytes in
            try check(vkGetQueryPoolResults(device.handle, handle, 0, UInt32(count), bytes.count, bytes.baseAddress, 8, flags),
                      "vkGetQueryPoolResults")
        }
        let period = Double(device.physical.timestampPeriod)
        return ticks.map { Double($0) * period }
    }
}
