import CVulkan
import Foundation

/// A storage buffer with its own memory: device-local (fast for the GPU, filled through staged
/// uploads) or host-visible (mapped for the buffer's whole life, for staging, read-back and small
/// values the host writes for the GPU).
public final class Buffer: @unchecked Sendable {
    /// Where the buffer's memory lives.
    public enum Location: Sendable {
        /// GPU memory the host cannot map.
        case deviceLocal
        /// Mapped memory the host reads fast (cached where possible): staging and read-back.
        case hostVisible
        /// Mapped memory the GPU reads fast: GPU memory the host can map where the device has it
        /// (resizable BAR), else host memory. For small values the host writes and shaders read.
        case hostWritten
    }

    public let handle: VkBuffer
    public let memory: VkDeviceMemory
    public let byteCount: Int
    public let location: Location
    /// The mapped bytes of a host-visible buffer; `nil` for device-local ones.
    public let mapped: UnsafeMutableRawPointer?
    let device: Device

    /// Allocates `byteCount` bytes (at least 4) usable as a storage buffer and a copy source and target.
    public init(device: Device, byteCount: Int, location: Location, label: String = "buffer") throws {
        self.device = device
        self.byteCount = max(byteCount, 4)
        self.location = location
        var info = VkBufferCreateInfo()
        info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO
        info.size = VkDeviceSize(self.byteCount)
        info.usage = VkBufferUsageFlags(VK_BUFFER_USAGE_STORAGE_BUFFER_BIT.rawValue
            | VK_BUFFER_USAGE_TRANSFER_SRC_BIT.rawValue | VK_BUFFER_USAGE_TRANSFER_DST_BIT.rawValue)
        info.sharingMode = VK_SHARING_MODE_EXCLUSIVE
        var buffer: VkBuffer?
        try check(vkCreateBuffer(device.handle, &info, nil, &buffer), "vkCreateBuffer(\(label), \(self.byteCount) bytes)")
        guard let buffer else { throw VulkanError(call: "vkCreateBuffer", message: "returned no buffer") }

        var requirements = VkMemoryRequirements()
        vkGetBufferMemoryRequirements(device.handle, buffer, &requirements)
        let hostFlags = VkMemoryPropertyFlags(VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT.rawValue | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT.rawValue)
        let deviceFlag = VkMemoryPropertyFlags(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT.rawValue)
        let (required, preferred) = switch location {
        case .deviceLocal: (deviceFlag, deviceFlag)
        case .hostVisible: (hostFlags, hostFlags | VkMemoryPropertyFlags(VK_MEMORY_PROPERTY_HOST_CACHED_BIT.rawValue))
        case .hostWritten: (hostFlags, hostFlags | deviceFlag)
        }
        guard let typeIndex = device.memoryType(typeBits: requirements.memoryTypeBits, required: required, preferred: preferred) else {
            vkDestroyBuffer(device.handle, buffer, nil)
            throw VulkanError(call: "vkAllocateMemory(\(label))", message: "the device has no suitable memory type")
        }
        var allocation = VkMemoryAllocateInfo()
        allocation.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO
        allocation.allocationSize = requirements.size
        allocation.memoryTypeIndex = typeIndex
        var memory: VkDeviceMemory?
        let result = vkAllocateMemory(device.handle, &allocation, nil, &memory)
        guard result == VK_SUCCESS, let memory else {
            vkDestroyBuffer(device.handle, buffer, nil)
            throw VulkanError(call: "vkAllocateMemory(\(label), \(requirements.size) bytes)", result: result,
                              hint: "not enough GPU memory; use a smaller --ctx or --cpu")
        }
        do {
            try check(vkBindBufferMemory(device.handle, buffer, memory, 0), "vkBindBufferMemory(\(label))")
            if location != .deviceLocal {
                var pointer: UnsafeMutableRawPointer?
                try check(vkMapMemory(device.handle, memory, 0, VkDeviceSize(VK_WHOLE_SIZE), 0, &pointer), "vkMapMemory(\(label))")
                mapped = pointer
            } else {
                mapped = nil
            }
        } catch {
            vkDestroyBuffer(device.handle, buffer, nil)
            vkFreeMemory(device.handle, memory, nil)
            throw error
        }
        self.handle = buffer
        self.memory = memory
    }

    deinit {
        vkDestroyBuffer(device.handle, handle, nil)
        vkFreeMemory(device.handle, memory, nil)
    }

    /// Copies `bytes` into the buffer at `offset`: directly when host-visible, otherwise through a
    /// staging buffer in chunks of `chunkBytes`, calling `progress` with the bytes done so far.
    public func upload(_ bytes: UnsafeRawBufferPointer, offset: Int = 0, chunkBytes: Int = 16 << 20,
                       progress: ((Int) -> Void)? = nil) throws {
        guard offset >= 0, offset + bytes.count <= byteCount else {
            throw VulkanError(call: "upload", message: "\(bytes.count) bytes at offset \(offset) do not fit a buffer of \(byteCount)")
        }
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        if let mapped {
            (mapped + offset).copyMemory(from: source, byteCount: bytes.count)
            progress?(bytes.count)
            return
        }
        let staging = try Buffer(device: device, byteCount: min(chunkBytes, bytes.count), location: .hostVisible, label: "staging")
        var done = 0
        while done < bytes.count {
            let size = min(staging.byteCount, bytes.count - done)
            staging.mapped!.copyMemory(from: source + done, byteCount: size)
            try device.run { $0.copy(from: staging, to: self, byteCount: size, destinationOffset: offset + done) }
            done += size
            progress?(done)
        }
    }

    /// Copies `array` into the buffer at `offset` (in bytes).
    public func upload<T>(_ array: [T], offset: Int = 0) throws {
        try array.withUnsafeBytes { try upload($0, offset: offset) }
    }

    /// Reads `count` elements of type `T` starting at byte `offset`, through a staging buffer if needed.
    public func read<T>(_ type: T.Type = T.self, count: Int, offset: Int = 0) throws -> [T] {
        let size = count * MemoryLayout<T>.stride
        guard offset >= 0, offset + size <= byteCount else {
            throw VulkanError(call: "read", message: "\(size) bytes at offset \(offset) exceed a buffer of \(byteCount)")
        }
        let source: Buffer
        var sourceOffset = offset
        if mapped != nil {
            source = self
        } else {
            source = try Buffer(device: device, byteCount: size, location: .hostVisible, label: "read-back")
            try device.run { $0.copy(from: self, to: source, byteCount: size, sourceOffset: offset) }
            sourceOffset = 0
        }
        return [T](unsafeUninitializedCapacity: count) { destination, initialized in
            UnsafeMutableRawPointer(destination.baseAddress!).copyMemory(from: source.mapped! + sourceOffset, byteCount: size)
            initialized = count
        }
    }

    /// Fills the whole buffer with the 32-bit `pattern` (e.g. NaN bits to poison an output).
    public func fill(_ pattern: UInt32) throws {
        try device.run { $0.fill(self, with: pattern) }
    }
}
