import CVulkan

/// A compute pipeline made from one SPIR-V module: its shader module, the layout of its storage
/// buffers (bindings 0..<bindingCount of set 0), its push-constant range, and specialization
/// constants (ids 0..<count, 32-bit each) fixed at creation.
public final class ComputePipeline: @unchecked Sendable {
    public let handle: VkPipeline
    public let layout: VkPipelineLayout
    public let setLayout: VkDescriptorSetLayout
    public let shaderModule: VkShaderModule
    public let name: String
    public let bindingCount: Int
    public let pushConstantSize: Int
    let device: Device

    /// Creates the pipeline; checks first that `pushConstantSize` equals the size of the shader's
    /// push-constant block, so the Swift and GLSL layouts cannot silently disagree.
    public init(device: Device, name: String, spirv: [UInt32], bindingCount: Int, pushConstantSize: Int,
                specialization: [UInt32] = []) throws {
        self.device = device
        self.name = name
        self.bindingCount = bindingCount
        self.pushConstantSize = pushConstantSize
        let reflected = try SPIRVReflection(words: spirv, name: name)
        if reflected.pushConstantSize != pushConstantSize {
            throw VulkanError(call: "pipeline \(name)", message:
                "push constants of \(pushConstantSize) bytes given, but the shader's block is \(reflected.pushConstantSize) bytes")
        }

        var moduleInfo = VkShaderModuleCreateInfo()
        moduleInfo.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO
        moduleInfo.codeSize = spirv.count * 4
        var module: VkShaderModule?
        try spirv.withUnsafeBufferPointer { words in
            moduleInfo.pCode = words.baseAddress
            try check(vkCreateShaderModule(device.handle, &moduleInfo, nil, &module), "vkCreateShaderModule(\(name))")
        }
        guard let module else { throw VulkanError(call: "vkCreateShaderModule(\(name))", message: "returned no module") }
        shaderModule = module

        var bindings = (0..<bindingCount).map { index -> VkDescriptorSetLayoutBinding in
            var binding = VkDescriptorSetLayoutBinding()
            binding.binding = UInt32(index)
            binding.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
            binding.descriptorCount = 1
            binding.stageFlags = VkShaderStageFlags(VK_SHADER_STAGE_COMPUTE_BIT.rawValue)
            return binding
        }
        var setInfo = VkDescriptorSetLayoutCreateInfo()
        setInfo.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO
        setInfo.bindingCount = UInt32(bindingCount)
        var setLayout: VkDescriptorSetLayout?
        let setResult = bindings.withUnsafeMutableBufferPointer { pointer in
            setInfo.pBindings = UnsafePointer(pointer.baseAddress)
            return vkCreateDescriptorSetLayout(device.handle, &setInfo, nil, &setLayout)
        }
        guard setResult == VK_SUCCESS, let setLayout else {
            vkDestroyShaderModule(device.handle, module, nil)
            throw VulkanError(call: "vkCreateDescriptorSetLayout(\(name))", result: setResult)
        }
        self.setLayout = setLayout

        var range = VkPushConstantRange()
        range.stageFlags = VkShaderStageFlags(VK_SHADER_STAGE_COMPUTE_BIT.rawValue)
        range.size = UInt32(pushConstantSize)
        var layoutInfo = VkPipelineLayoutCreateInfo()
        layoutInfo.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO
        layoutInfo.setLayoutCount = 1
        var layout: VkPipelineLayout?
        var setLayoutOptional: VkDescriptorSetLayout? = setLayout
        let layoutResult = withUnsafePointer(to: &setLayoutOptional) { setPointer in
            withUnsafePointer(to: &range) { rangePointer in
                layoutInfo.pSetLayouts = setPointer
                layoutInfo.pushConstantRangeCount = pushConstantSize > 0 ? 1 : 0
                layoutInfo.pPushConstantRanges = pushConstantSize > 0 ? rangePointer : nil
                return vkCreatePipelineLayout(device.handle, &layoutInfo, nil, &layout)
            }
        }
        guard layoutResult == VK_SUCCESS, let layout else {
            vkDestroyDescriptorSetLayout(device.handle, setLayout, nil)
            vkDestroyShaderModule(device.handle, module, nil)
            throw VulkanError(call: "vkCreatePipelineLayout(\(name))", result: layoutResult)
        }
        self.layout = layout

        var entries = specialization.indices.map { index -> VkSpecializationMapEntry in
            VkSpecializationMapEntry(constantID: UInt32(index), offset: UInt32(index * 4), size: 4)
        }
        var values = specialization
        var pipeline: VkPipeline?
        let pipelineResult = entries.withUnsafeMutableBufferPointer { entryPointer in
            values.withUnsafeMutableBytes { valueBytes in
                var specializationInfo = VkSpecializationInfo(
                    mapEntryCount: UInt32(entryPointer.count), pMapEntries: UnsafePointer(entryPointer.baseAddress),
                    dataSize: valueBytes.count, pData: UnsafeRawPointer(valueBytes.baseAddress))
                return withUnsafePointer(to: &specializationInfo) { specializationPointer in
                    "main".withCString { entryName in
                        var stage = VkPipelineShaderStageCreateInfo()
                        stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO
                        stage.stage = VK_SHADER_STAGE_COMPUTE_BIT
                        stage.module = module
                        stage.pName = entryName
                        stage.pSpecializationInfo = specialization.isEmpty ? nil : specializationPointer
                        var info = VkComputePipelineCreateInfo()
                        info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO
                        info.stage = stage
                        info.layout = layout
                        if device.capturesStatistics { info.flags = VkPipelineCreateFlags(VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR.rawValue) }
                        return vkCreateComputePipelines(device.handle, nil, 1, &info, nil, &pipeline)
                    }
                }
            }
        }
        guard pipelineResult == VK_SUCCESS, let pipeline else {
            vkDestroyPipelineLayout(device.handle, layout, nil)
            vkDestroyDescriptorSetLayout(device.handle, setLayout, nil)
            vkDestroyShaderModule(device.handle, module, nil)
            throw VulkanError(call: "vkCreateComputePipelines(\(name))", result: pipelineResult)
        }
        handle = pipeline
    }

    deinit {
        vkDestroyPipeline(device.handle, handle, nil)
        vkDestroyPipelineLayout(device.handle, layout, nil)
        vkDestroyDescriptorSetLayout(device.handle, setLayout, nil)
        vkDestroyShaderModule(device.handle, shaderModule, nil)
    }
}

extension ComputePipeline {
    /// The driver's statistics of the compiled shader ("name: value" lines, e.g. its register
    /// count), when the device captures them (`Device.capturesStatistics`); empty otherwise.
    public func statistics() throws -> [String] {
        guard device.capturesStatistics,
              let address = vkGetDeviceProcAddr(device.handle, "vkGetPipelineExecutableStatisticsKHR") else { return [] }
        let get = unsafeBitCast(address, to: PFN_vkGetPipelineExecutableStatisticsKHR.self)
        var info = VkPipelineExecutableInfoKHR()
        info.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR
        info.pipeline = handle
        info.executableIndex = 0
        var count: UInt32 = 0
        try check(get(device.handle, &info, &count, nil), "vkGetPipelineExecutableStatisticsKHR(\(name))")
        var entries = [VkPipelineExecutableStatisticKHR](repeating: VkPipelineExecutableStatisticKHR(), count: Int(count))
        for index in entries.indices { entries[index].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR }
        try check(get(device.handle, &info, &count, &entries), "vkGetPipelineExecutableStatisticsKHR(\(name))")
        return entries.prefix(Int(count)).map { entry in
            var entry = entry
            let label = withUnsafeBytes(of: &entry.name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let value: String
            switch entry.format {
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: value = entry.value.b32 != 0 ? "true" : "false"
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: value = "\(entry.value.i64)"
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: value = "\(entry.value.u64)"
            default: value = "\(entry.value.f64)"
            }
            return "\(label): \(value)"
        }
    }
}
