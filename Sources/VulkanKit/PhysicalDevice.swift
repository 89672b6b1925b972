import CVulkan
import Foundation

/// One GPU (or software device) the loader reports, and the facts about it that phi-gpu uses.
public struct PhysicalDevice: @unchecked Sendable {
    /// The kind of device, in the order phi-gpu prefers them.
    public enum Kind: String, Sendable {
        case discrete = "discrete GPU", integrated = "integrated GPU", virtual = "virtual GPU", cpu = "CPU", other = "other"

        /// Higher is preferred: discrete over integrated over virtual over CPU-type.
        public var preference: Int {
            switch self {
            case .discrete: 4
            case .integrated: 3
            case .virtual: 2
            case .cpu: 1
            case .other: 0
            }
        }
    }

    /// One memory heap: its size, whether it is device-local, and the budget the driver reports.
    public struct Heap: Sendable {
        public var size: UInt64
        public var deviceLocal: Bool
        /// `VK_EXT_memory_budget`'s budget for this process, when the driver reports one.
        public var budget: UInt64?
        public var usage: UInt64?
    }

    /// The optional capabilities the kernels may use.
    public struct Features: Sendable, Equatable {
        public var float16 = false
        public var int8 = false
        public var storage8Bit = false
        public var storage16Bit = false
        public var cooperativeMatrixNV = false
        public var cooperativeMatrixKHR = false
        public var integerDotProduct = false
        public var memoryBudget = false
        public var subgroupSizeControl = false
    }

    let instance: Instance
    public let handle: VkPhysicalDevice
    /// The position in the loader's list: what `--device N` and `PHI_GPU_DEVICE` refer to.
    public let index: Int
    public let name: String
    public let kind: Kind
    public let apiVersion: String
    public let driverName: String
    public let driverInfo: String
    public let vendorID: UInt32
    public let heaps: [Heap]
    public let subgroupSize: Int
    /// `maxComputeSharedMemorySize` in bytes.
    public let sharedMemoryBytes: Int
    public let maxWorkgroupInvocations: Int
    /// Streaming multiprocessors, where the device says (VK_NV_shader_sm_builtins); else nil.
    public let multiprocessors: Int?
    /// Nanoseconds per timestamp tick.
    public let timestampPeriod: Float
    public let features: Features
    public let extensions: Set<String>
    let rawAPIVersion: UInt32

    init(instance: Instance, handle: VkPhysicalDevice, index: Int) {
        self.instance = instance
        self.handle = handle
        self.index = index
        let extensions = Self.deviceExtensions(handle)
        self.extensions = extensions

        var properties = VkPhysicalDeviceProperties()
        vkGetPhysicalDeviceProperties(handle, &properties)
        rawAPIVersion = properties.apiVersion
        name = string(fromCTuple: properties.deviceName)
        vendorID = properties.vendorID
        apiVersion = Instance.versionString(properties.apiVersion)
        sharedMemoryBytes = Int(properties.limits.maxComputeSharedMemorySize)
        maxWorkgroupInvocations = Int(properties.limits.maxComputeWorkGroupInvocations)
        timestampPeriod = properties.limits.timestampPeriod
        switch properties.deviceType {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: kind = .discrete
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: kind = .integrated
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: kind = .virtual
        case VK_PHYSICAL_DEVICE_TYPE_CPU: kind = .cpu
        default: kind = .other
        }

        // Subgroup, driver and (where offered) multiprocessor properties, chained into one properties2 query.
        var subgroup = VkPhysicalDeviceSubgroupProperties()
        subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES
        var driver = VkPhysicalDeviceDriverProperties()
        driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES
        var multiprocessor = VkPhysicalDeviceShaderSMBuiltinsPropertiesNV()
        multiprocessor.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV
        let hasMultiprocessors = extensions.contains("VK_NV_shader_sm_builtins")
        withUnsafeMutablePointer(to: &multiprocessor) { multiprocessorPointer in
            if hasMultiprocessors { driver.pNext = UnsafeMutableRawPointer(multiprocessorPointer) }
            withUnsafeMutablePointer(to: &driver) { driverPointer in
                subgroup.pNext = UnsafeMutableRawPointer(driverPointer)
                withUnsafeMutablePointer(to: &subgroup) { subgroupPointer in
                    var properties2 = VkPhysicalDeviceProperties2()
                    properties2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
                    properties2.pNext = UnsafeMutableRawPointer(subgroupPointer)
                    vkGetPhysicalDeviceProperties2(handle, &properties2)
                }
            }
        }
        multiprocessors = hasMultiprocessors && multiprocessor.shaderSMCount > 0 ? Int(multiprocessor.shaderSMCount) : nil
        subgroupSize = Int(subgroup.subgroupSize)
        driverName = string(fromCTuple: driver.driverName)
        driverInfo = string(fromCTuple: driver.driverInfo)

        heaps = Self.memoryHeaps(handle, budget: extensions.contains("VK_EXT_memory_budget"))
        features = Self.queryFeatures(handle, extensions: extensions, apiVersion: properties.apiVersion)
    }

    /// Total size of the device-local heaps.
    public var deviceLocalBytes: UInt64 { heaps.filter(\.deviceLocal).reduce(0) { $0 + $1.size } }

    /// The memory this process may still allocate on the device: the budget minus usage where the
    /// driver reports it, else the device-local heap size.
    public var availableDeviceBytes: UInt64 {
        let local = heaps.filter(\.deviceLocal)
        return local.reduce(0) { total, heap in
            if let budget = heap.budget, let usage = heap.usage { return total + (budget > usage ? budget - usage : 0) }
            return total + heap.size
        }
    }

    private static func deviceExtensions(_ handle: VkPhysicalDevice) -> Set<String> {
        var count: UInt32 = 0
        guard vkEnumerateDeviceExtensionProperties(handle, nil, &count, nil) == VK_SUCCESS else { return [] }
        var list = [VkExtensionProperties](repeating: VkExtensionProperties(), count: Int(count))
        guard vkEnumerateDeviceExtensionProperties(handle, nil, &count, &list) == VK_SUCCESS else { return [] }
        return Set(list.prefix(Int(count)).map { string(fromCTuple: $0.extensionName) })
    }

    private static func memoryHeaps(_ handle: VkPhysicalDevice, budget: Bool) -> [Heap] {
        var budgetProperties = VkPhysicalDeviceMemoryBudgetPropertiesEXT()
        budgetProperties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT
        var memory = VkPhysicalDeviceMemoryProperties2()
        memory.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2
        withUnsafeMutablePointer(to: &budgetProperties) { pointer in
            if budget { memory.pNext = UnsafeMutableRawPointer(pointer) }
            vkGetPhysicalDeviceMemoryProperties2(handle, &memory)
        }
        let count = Int(memory.memoryProperties.memoryHeapCount)
        let heaps = withUnsafeBytes(of: memory.memoryProperties.memoryHeaps) { Array($0.bindMemory(to: VkMemoryHeap.self).prefix(count)) }
        let budgets = withUnsafeBytes(of: budgetProperties.heapBudget) { Array($0.bindMemory(to: VkDeviceSize.self).prefix(count)) }
        let usages = withUnsafeBytes(of: budgetProperties.heapUsage) { Array($0.bindMemory(to: VkDeviceSize.self).prefix(count)) }
        return heaps.enumerated().map { i, heap in
            Heap(size: heap.size,
                 deviceLocal: (heap.flags & VkMemoryHeapFlags(VK_MEMORY_HEAP_DEVICE_LOCAL_BIT.rawValue)) != 0,
                 budget: budget ? budgets[i] : nil, usage: budget ? usages[i] : nil)
        }
    }

    private static func queryFeatures(_ handle: VkPhysicalDevice, extensions: Set<String>, apiVersion: UInt32) -> Features {
        var vulkan11 = VkPhysicalDeviceVulkan11Features()
        vulkan11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES
        var vulkan12 = VkPhysicalDeviceVulkan12Features()
        vulkan12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES
        var cooperativeNV = VkPhysicalDeviceCooperativeMatrixFeaturesNV()
        cooperativeNV.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV
        var dotProduct = VkPhysicalDeviceShaderIntegerDotProductFeatures()
        dotProduct.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES
        // VK_KHR_cooperative_matrix postdates Debian 12's headers: its feature struct by hand
        // (sType, pNext, cooperativeMatrix, cooperativeMatrixRobustBufferAccess).
        let cooperativeKHR = UnsafeMutableRawPointer.allocate(byteCount: 24, alignment: 8)
        defer { cooperativeKHR.deallocate() }
        cooperativeKHR.initializeMemory(as: UInt8.self, repeating: 0, count: 24)
        cooperativeKHR.storeBytes(of: 1_000_506_000, toByteOffset: 0, as: UInt32.self)

        let hasNV = extensions.contains("VK_NV_cooperative_matrix")
        let hasKHR = extensions.contains("VK_KHR_cooperative_matrix")
        let hasDot = extensions.contains("VK_KHR_shader_integer_dot_product") || apiVersion >= ((1 << 22) | (3 << 12))
        withUnsafeMutablePointer(to: &vulkan11) { p11 in
            withUnsafeMutablePointer(to: &vulkan12) { p12 in
                withUnsafeMutablePointer(to: &cooperativeNV) { pNV in
                    withUnsafeMutablePointer(to: &dotProduct) { pDot in
                        var chain: [UnsafeMutableRawPointer] = [UnsafeMutableRawPointer(p11), UnsafeMutableRawPointer(p12)]
                        if hasNV { chain.append(UnsafeMutableRawPointer(pNV)) }
                        if hasDot { chain.append(UnsafeMutableRawPointer(pDot)) }
                        if hasKHR { chain.append(cooperativeKHR) }
                        // Each struct starts with sType (4 bytes, padded to 8) then pNext.
                        for (a, b) in zip(chain, chain.dropFirst()) { a.storeBytes(of: b, toByteOffset: 8, as: UnsafeMutableRawPointer?.self) }
                        var features2 = VkPhysicalDeviceFeatures2()
                        features2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
                        features2.pNext = chain.first
                        vkGetPhysicalDeviceFeatures2(handle, &features2)
                    }
                }
            }
        }
        var features = Features()
        features.float16 = vulkan12.shaderFloat16 != 0
        features.int8 = vulkan12.shaderInt8 != 0
        features.storage8Bit = vulkan12.storageBuffer8BitAccess != 0
        features.storage16Bit = vulkan11.storageBuffer16BitAccess != 0
        features.cooperativeMatrixNV = hasNV && cooperativeNV.cooperativeMatrix != 0
        features.cooperativeMatrixKHR = hasKHR && cooperativeKHR.load(fromByteOffset: 16, as: UInt32.self) != 0
        features.integerDotProduct = hasDot && dotProduct.shaderIntegerDotProduct != 0
        features.memoryBudget = extensions.contains("VK_EXT_memory_budget")
        features.subgroupSizeControl = extensions.contains("VK_EXT_subgroup_size_control") || apiVersion >= ((1 << 22) | (3 << 12))
        return features
    }
}

/// Chooses the device phi-gpu runs on.
public enum DeviceSelection {
    /// The environment variable that picks a device by index, like `--device N`.
    public static let environmentVariable = "PHI_GPU_DEVICE"

    /// The device to use: `requested` (from `--device`) or `$PHI_GPU_DEVICE` if given, else the most
    /// preferred kind (discrete, integrated, virtual, CPU-type), first in the loader's order on ties.
    /// Throws when an index is out of range or not a number.
    public static func choose(from devices: [PhysicalDevice], requested: Int? = nil,
                              environment: [String: String] = ProcessInfo.processInfo.environment) throws -> PhysicalDevice? {
        var index = requested
        if index == nil, let text = environment[environmentVariable], !text.isEmpty {
            guard let parsed = Int(text) else {
                throw VulkanError(call: "device selection", message: "\(environmentVariable)=\(text) is not a device index; run `phi-gpu devices` to list them")
            }
            index = parsed
        }
        if let index {
            guard devices.indices.contains(index) else {
                throw VulkanError(call: "device selection", message:
                    "there is no Vulkan device \(index) (found \(devices.count)); run `phi-gpu devices` to list them")
            }
            return devices[index]
        }
        return devices.max { a, b in
            a.kind.preference < b.kind.preference || (a.kind.preference == b.kind.preference && a.index > b.index)
        }
    }
}
