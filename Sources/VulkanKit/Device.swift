import CVulkan
import Foundation

/// A logical device with one compute queue, the features phi-gpu uses enabled where offered.
///
/// Owns its command pool for one-off work (uploads, downloads). Every other Vulkan object keeps
/// its `Device` alive, so the device is destroyed last.
public final class Device: @unchecked Sendable {
    public let handle: VkDevice
    public let physical: PhysicalDevice
    public let queue: VkQueue
    public let queueFamily: UInt32
    /// The features that were actually enabled (a subset of `physical.features`).
    public let enabled: PhysicalDevice.Features
    /// Whether pipelines keep the driver's statistics of their compiled code (registers, shared
    /// memory…) for `ComputePipeline.statistics()`: set `PHI_GPU_SHADER_STATISTICS=1` on a device
    /// with VK_KHR_pipeline_executable_properties.
    public let capturesStatistics: Bool
    public static let statisticsVariable = "PHI_GPU_SHADER_STATISTICS"
    let memoryProperties: VkPhysicalDeviceMemoryProperties
    private let lock = NSLock()
    private var transientPool: CommandPool?

    /// The instance, kept alive for as long as the device.
    public var instance: Instance { physical.instance }

    public init(physical: PhysicalDevice) throws {
        self.physical = physical
        let family = try Self.computeQueueFamily(physical.handle)
        queueFamily = family

        let offered = physical.features
        var enabled = PhysicalDevice.Features()
        enabled.float16 = offered.float16
        enabled.int8 = offered.int8
        enabled.storage8Bit = offered.storage8Bit
        enabled.storage16Bit = offered.storage16Bit
        enabled.cooperativeMatrixNV = offered.cooperativeMatrixNV
        enabled.cooperativeMatrixKHR = offered.cooperativeMatrixKHR
        enabled.integerDotProduct = offered.integerDotProduct
        enabled.memoryBudget = offered.memoryBudget
        enabled.subgroupSizeControl = offered.subgroupSizeControl
        self.enabled = enabled

        var extensions: [String] = []
        if enabled.cooperativeMatrixNV { extensions.append("VK_NV_cooperative_matrix") }
        if enabled.cooperativeMatrixKHR { extensions.append("VK_KHR_cooperative_matrix") }
        if enabled.memoryBudget { extensions.append("VK_EXT_memory_budget") }
        if enabled.integerDotProduct, physical.extensions.contains("VK_KHR_shader_integer_dot_product") {
            extensions.append("VK_KHR_shader_integer_dot_product")
        }
        if physical.extensions.contains("VK_KHR_portability_subset") { extensions.append("VK_KHR_portability_subset") }
        let capturesStatistics = ProcessInfo.processInfo.environment[Self.statisticsVariable] == "1"
            && physical.extensions.contains("VK_KHR_pipeline_executable_properties")
        self.capturesStatistics = capturesStatistics
        if capturesStatistics { extensions.append("VK_KHR_pipeline_executable_properties") }
        var executableInfo = VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR()
        executableInfo.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR
        executableInfo.pipelineExecutableInfo = 1

        var vulkan11 = VkPhysicalDeviceVulkan11Features()
        vulkan11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES
        vulkan11.storageBuffer16BitAccess = VkBool32(enabled.storage16Bit ? 1 : 0)
        var vulkan12 = VkPhysicalDeviceVulkan12Features()
        vulkan12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES
        vulkan12.shaderFloat16 = VkBool32(enabled.float16 ? 1 : 0)
        vulkan12.shaderInt8 = VkBool32(enabled.int8 ? 1 : 0)
        vulkan12.storageBuffer8BitAccess = VkBool32(enabled.storage8Bit ? 1 : 0)
        var cooperativeNV = VkPhysicalDeviceCooperativeMatrixFeaturesNV()
        cooperativeNV.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV
        cooperativeNV.cooperativeMatrix = 1
        var dotProduct = VkPhysicalDeviceShaderIntegerDotProductFeatures()
        dotProduct.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES
        dotProduct.shaderIntegerDotProduct = 1
        let cooperativeKHR = UnsafeMutableRawPointer.allocate(byteCount: 24, alignment: 8)
        defer { cooperativeKHR.deallocate() }
        cooperativeKHR.initializeMemory(as: UInt8.self, repeating: 0, count: 24)
        cooperativeKHR.storeBytes(of: 1_000_506_000, toByteOffset: 0, as: UInt32.self)
        cooperativeKHR.storeBytes(of: 1, toByteOffset: 16, as: UInt32.self)

        var device: VkDevice?
        var priority: Float = 1
        let result: VkResult = withUnsafeMutablePointer(to: &vulkan11) { p11 in
            withUnsafeMutablePointer(to: &vulkan12) { p12 in
                withUnsafeMutablePointer(to: &cooperativeNV) { pNV in withUnsafeMutablePointer(to: &dotProduct) { pDot in
                withUnsafeMutablePointer(to: &executableInfo) { pExecutable in
                    var chain: [UnsafeMutableRawPointer] = [UnsafeMutableRawPointer(p11), UnsafeMutableRawPointer(p12)]
                    if capturesStatistics { chain.append(UnsafeMutableRawPointer(pExecutable)) }
                    if enabled.cooperativeMatrixNV { chain.append(UnsafeMutableRawPointer(pNV)) }
                    if enabled.integerDotProduct { chain.append(UnsafeMutableRawPointer(pDot)) }
                    if enabled.cooperativeMatrixKHR { chain.append(cooperativeKHR) }
                    for (a, b) in zip(chain, chain.dropFirst()) { a.storeBytes(of: b, toByteOffset: 8, as: UnsafeMutableRawPointer?.self) }
                    var features2 = VkPhysicalDeviceFeatures2()
                    features2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
                    features2.pNext = chain.first
                    return withUnsafePointer(to: &priority) { priorityPointer in
                        var queueInfo = VkDeviceQueueCreateInfo()
                        queueInfo.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO
                        queueInfo.queueFamilyIndex = family
                        queueInfo.queueCount = 1
                        queueInfo.pQueuePriorities = priorityPointer
                        return withUnsafePointer(to: &queueInfo) { queuePointer in
                            withUnsafePointer(to: &features2) { featuresPointer in
                                withCStrings(extensions) { names in
                                    names.withUnsafeBufferPointer { namesPointer in
                                        var info = VkDeviceCreateInfo()
                                        info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO
                                        info.pNext = UnsafeRawPointer(featuresPointer)
                                        info.queueCreateInfoCount = 1
                                        info.pQueueCreateInfos = queuePointer
                                        info.enabledExtensionCount = UInt32(names.count)
                                        info.ppEnabledExtensionNames = namesPointer.baseAddress
                                        return vkCreateDevice(physical.handle, &info, nil, &device)
                                    }
                                }
                            }
                        }
                    }
                } } }
            }
        }
        try check(result, "vkCreateDevice(\(physical.name))")
        guard let device else { throw VulkanError(call: "vkCreateDevice", message: "returned no device") }
        handle = device
        var queue: VkQueue?
        vkGetDeviceQueue(device, family, 0, &queue)
        guard let queue else { throw VulkanError(call: "vkGetDeviceQueue", message: "returned no queue") }
        self.queue = queue
        var memory = VkPhysicalDeviceMemoryProperties()
        vkGetPhysicalDeviceMemoryProperties(physical.handle, &memory)
        memoryProperties = memory
    }

    deinit {
        vkDeviceWaitIdle(handle)
        transientPool = nil
        vkDestroyDevice(handle, nil)
    }

    /// Submits `commands` and waits until the GPU has finished them.
    public func submitAndWait(_ commands: CommandBuffer) throws {
        let fence = try Fence(device: self)
        try submit(commands, signalling: fence)
        try fence.wait()
    }

    /// Submits `commands`; `fence`, if any, is signalled when they and everything submitted
    /// before them have finished.
    public func submit(_ commands: CommandBuffer, signalling fence: Fence?) throws {
        var buffer: VkCommandBuffer? = commands.handle
        var info = VkSubmitInfo()
        info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO
        info.commandBufferCount = 1
        try withUnsafePointer(to: &buffer) { pointer in
            info.pCommandBuffers = pointer
            try lock.withLock { try check(vkQueueSubmit(queue, 1, &info, fence?.handle), "vkQueueSubmit") }
        }
    }

    /// Records commands into a fresh one-off command buffer, submits it and waits.
    public func run(_ record: (CommandBuffer) throws -> Void) throws {
        let pool = try lock.withLock { () throws -> CommandPool in
            if let transientPool { return transientPool }
            let pool = try CommandPool(device: self)
            transientPool = pool
            return pool
        }
        let commands = try CommandBuffer(pool: pool)
        try commands.begin()
        try record(commands)
        try commands.end()
        try submitAndWait(commands)
    }

    public func waitIdle() throws { try check(vkDeviceWaitIdle(handle), "vkDeviceWaitIdle") }

    /// The index of a memory type allowed by `typeBits` with all of `required` (and, if possible, `preferred`) flags.
    func memoryType(typeBits: UInt32, required: VkMemoryPropertyFlags, preferred: VkMemoryPropertyFlags = 0) -> UInt32? {
        let count = Int(memoryProperties.memoryTypeCount)
        let types = withUnsafeBytes(of: memoryProperties.memoryTypes) { Array($0.bindMemory(to: VkMemoryType.self).prefix(count)) }
        let allowed = types.indices.filter { (typeBits & (1 << UInt32($0))) != 0 && (types[$0].propertyFlags & required) == required }
        let best = allowed.first { (types[$0].propertyFlags & preferred) == preferred } ?? allowed.first
        return best.map(UInt32.init)
    }

    private static func computeQueueFamily(_ physical: VkPhysicalDevice) throws -> UInt32 {
        var count: UInt32 = 0
        vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, nil)
        var families = [VkQueueFamilyProperties](repeating: VkQueueFamilyProperties(), count: Int(count))
        vkGetPhysicalDeviceQueueFamilyProperties(physical, &count, &families)
        let compute = VkQueueFlags(VK_QUEUE_COMPUTE_BIT.rawValue)
        guard let index = families.firstIndex(where: { ($0.queueFlags & compute) != 0 }) else {
            throw VulkanError(call: "vkGetPhysicalDeviceQueueFamilyProperties", message: "the device has no compute queue")
        }
        return UInt32(index)
    }
}

/// A fence the host waits on for submitted work.
public final class Fence: @unchecked Sendable {
    public let handle: VkFence
    let device: Device

    public init(device: Device) throws {
        self.device = device
        var info = VkFenceCreateInfo()
        info.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO
        var fence: VkFence?
        try check(vkCreateFence(device.handle, &info, nil, &fence), "vkCreateFence")
        guard let fence else { throw VulkanError(call: "vkCreateFence", message: "returned no fence") }
        handle = fence
    }

    deinit { vkDestroyFence(device.handle, handle, nil) }

    /// Waits (up to `timeoutSeconds`) for the fence, then resets it for reuse.
    public func wait(timeoutSeconds: Double = 600) throws {
        var fence: VkFence? = handle
        let result = vkWaitForFences(device.handle, 1, &fence, VkBool32(VK_TRUE), UInt64(timeoutSeconds * 1e9))
        if result == VK_TIMEOUT {
            throw VulkanError(call: "vkWaitForFences", result: result, hint: "the GPU did not finish within \(Int(timeoutSeconds)) s")
        }
        try check(result, "vkWaitForFences")
        try check(vkResetFences(device.handle, 1, &fence), "vkResetFences")
    }
}
