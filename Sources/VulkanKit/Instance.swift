import CVulkan
import Foundation

/// A Vulkan instance: the loader, the optional validation layer, and the physical devices it sees.
///
/// Validation (`VK_LAYER_KHRONOS_validation`, Debian's `vulkan-validationlayers`) is turned on by
/// `PHI_GPU_VALIDATE=1` or `validation: true`; its messages go to stderr and errors are counted in
/// `validationErrorCount`, so tests can assert there were none.
public final class Instance: @unchecked Sendable {
    public let handle: VkInstance
    /// True when the validation layer was requested and found.
    public let validationEnabled: Bool
    private var messenger: VkDebugUtilsMessengerEXT?
    private let messages: ValidationLog

    /// Creates the instance. Throws when no Vulkan loader or driver is installed.
    public init(validation: Bool? = nil, applicationName: String = "phi-gpu") throws {
        let wantValidation = validation ?? (ProcessInfo.processInfo.environment["PHI_GPU_VALIDATE"] == "1")
        let layers = try Self.availableLayers()
        let extensions = try Self.availableExtensions()
        let useValidation = wantValidation && layers.contains("VK_LAYER_KHRONOS_validation")
        if wantValidation && !useValidation {
            FileHandle.standardError.write(Data(
                "phi-gpu: PHI_GPU_VALIDATE=1 but VK_LAYER_KHRONOS_validation is not installed (apt-get install vulkan-validationlayers); continuing without it\n".utf8))
        }
        var enabledLayers: [String] = useValidation ? ["VK_LAYER_KHRONOS_validation"] : []
        var enabledExtensions: [String] = []
        if useValidation && extensions.contains("VK_EXT_debug_utils") { enabledExtensions.append("VK_EXT_debug_utils") }
        if extensions.contains("VK_KHR_portability_enumeration") {
            enabledExtensions.append("VK_KHR_portability_enumeration")
        }
        if enabledLayers.isEmpty { enabledLayers = [] }

        var version: UInt32 = 0
        if vkEnumerateInstanceVersion(&version) != VK_SUCCESS { version = (1 << 22) }
        let apiVersion = min(version, (1 << 22) | (3 << 12))  // at most Vulkan 1.3
        guard apiVersion >= ((1 << 22) | (2 << 12)) else {
            throw VulkanError(call: "vkEnumerateInstanceVersion", message:
                "the Vulkan loader supports only \(Self.versionString(version)); phi-gpu needs Vulkan 1.2 or newer")
        }

        let log = ValidationLog()
        self.messages = log
        var instance: VkInstance?
        let result: VkResult = withCStrings(enabledLayers) { layerPointers in
            withCStrings(enabledExtensions) { extensionPointers in
                applicationName.withCString { name in
                    var app = VkApplicationInfo()
                    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO
                    app.pApplicationName = name
                    app.pEngineName = name
                    app.apiVersion = apiVersion
                    return withUnsafePointer(to: &app) { appPointer in
                        var info = VkInstanceCreateInfo()
                        info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO
                        info.pApplicationInfo = appPointer
                        if enabledExtensions.contains("VK_KHR_portability_enumeration") {
                            info.flags = VkInstanceCreateFlags(VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR.rawValue)
                        }
                        info.enabledLayerCount = UInt32(layerPointers.count)
                        info.enabledExtensionCount = UInt32(extensionPointers.count)
                        return layerPointers.withUnsafeBufferPointer { layers in
                            extensionPointers.withUnsafeBufferPointer { exts in
                                info.ppEnabledLayerNames = layers.baseAddress
                                info.ppEnabledExtensionNames = exts.baseAddress
                                return vkCreateInstance(&info, nil, &instance)
                            }
                        }
                    }
                }
            }
        }
        if result == VK_ERROR_INCOMPATIBLE_DRIVER || result == VK_ERROR_INITIALIZATION_FAILED {
            throw VulkanError(call: "vkCreateInstance", result: result, hint:
                "no Vulkan driver found; install your GPU's Vulkan driver (or mesa-vulkan-drivers), or use --cpu")
        }
        try check(result, "vkCreateInstance")
        guard let instance else { throw VulkanError(call: "vkCreateInstance", message: "returned no instance") }
        self.handle = instance
        self.validationEnabled = useValidation
        if useValidation && enabledExtensions.contains("VK_EXT_debug_utils") {
            self.messenger = try Self.installMessenger(instance: instance, log: log)
        }
    }

    deinit {
        if let messenger, let destroy = loadFunction(
            "vkDestroyDebugUtilsMessengerEXT", as: PFN_vkDestroyDebugUtilsMessengerEXT.self) {
            destroy(handle, messenger, nil)
        }
        vkDestroyInstance(handle, nil)
    }

    /// Validation errors reported so far (0 when validation is off).
    public var validationErrorCount: Int { messages.errorCount }
    /// The text of the validation errors reported so far.
    public var validationErrors: [String] { messages.errors }

    /// Every physical device the loader reports, with the facts phi-gpu uses, in the loader's order.
    public func physicalDevices() throws -> [PhysicalDevice] {
        var count: UInt32 = 0
        try check(vkEnumeratePhysicalDevices(handle, &count, nil), "vkEnumeratePhysicalDevices")
        var handles = [VkPhysicalDevice?](repeating: nil, count: Int(count))
        try check(vkEnumeratePhysicalDevices(handle, &count, &handles), "vkEnumeratePhysicalDevices")
        return handles.prefix(Int(count)).enumerated().compactMap { index, device in
            device.map { PhysicalDevice(instance: self, handle: $0, index: index) }
        }
    }

    func loadFunction<T>(_ name: String, as type: T.Type) -> T? {
        guard let pointer = vkGetInstanceProcAddr(handle, name) else { return nil }
        return unsafeBitCast(pointer, to: type)
    }

    static func availableLayers() throws -> Set<String> {
        var count: UInt32 = 0
        try check(vkEnumerateInstanceLayerProperties(&count, nil), "vkEnumerateInstanceLayerProperties")
        var layers = [VkLayerProperties](repeating: VkLayerProperties(), count: Int(count))
        try check(vkEnumerateInstanceLayerProperties(&count, &layers), "vkEnumerateInstanceLayerProperties")
        return Set(layers.prefix(Int(count)).map { string(fromCTuple: $0.layerName) })
    }

    static func availableExtensions() throws -> Set<String> {
        var count: UInt32 = 0
        try check(vkEnumerateInstanceExtensionProperties(nil, &count, nil), "vkEnumerateInstanceExtensionProperties")
        var list = [VkExtensionProperties](repeating: VkExtensionProperties(), count: Int(count))
        try check(vkEnumerateInstanceExtensionProperties(nil, &count, &list), "vkEnumerateInstanceExtensionProperties")
        return Set(list.prefix(Int(count)).map { string(fromCTuple: $0.extensionName) })
    }

    static func versionString(_ version: UInt32) -> String {
        "\(version >> 22).\((version >> 12) & 0x3ff).\(version & 0xfff)"
    }

    private static func installMessenger(instance: VkInstance, log: ValidationLog) throws -> VkDebugUtilsMessengerEXT? {
        guard let pointer = vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT") else { return nil }
        let create = unsafeBitCast(pointer, to: PFN_vkCreateDebugUtilsMessengerEXT.self)
        var info = VkDebugUtilsMessengerCreateInfoEXT()
        info.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT
        info.messageSeverity = VkDebugUtilsMessageSeverityFlagsEXT(
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT.rawValue | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT.rawValue)
        info.messageType = VkDebugUtilsMessageTypeFlagsEXT(
            VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT.rawValue | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT.rawValue
                | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT.rawValue)
        info.pfnUserCallback = validationCallback
        info.pUserData = Unmanaged.passUnretained(log).toOpaque()
        var messenger: VkDebugUtilsMessengerEXT?
        try check(create(instance, &info, nil, &messenger), "vkCreateDebugUtilsMessengerEXT")
        return messenger
    }
}

/// Collects validation messages (the callback may run on any thread).
final class ValidationLog: @unchecked Sendable {
    private let lock = NSLock()
    private var collected: [String] = []
    var errorCount: Int { lock.withLock { collected.count } }
    var errors: [String] { lock.withLock { collected } }
    func record(_ message: String) { lock.withLock { collected.append(message) } }
}

private let validationCallback: PFN_vkDebugUtilsMessengerCallbackEXT = { severity, _, data, userData in
    let message = data.map { String(cString: $0.pointee.pMessage) } ?? "(no message)"
    let isError = (severity.rawValue & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT.rawValue) != 0
    FileHandle.standardError.write(Data("vulkan validation \(isError ? "error" : "warning"): \(message)\n".utf8))
    if isError, let userData {
        Unmanaged<ValidationLog>.fromOpaque(userData).takeUnretainedValue().record(message)
    }
    return VkBool32(VK_FALSE)
}

/// Calls `body` with C string pointers for `strings`, valid for the call's duration.
func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return body(copies.map { UnsafePointer($0) })
}
