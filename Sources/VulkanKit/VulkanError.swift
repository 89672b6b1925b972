import CVulkan

/// The one error type of the Vulkan wrapper: the call that failed and the `VkResult` it returned,
/// or a condition the wrapper itself found (no device, missing memory type, bad argument).
public struct VulkanError: Error, CustomStringConvertible, Sendable {
    /// The Vulkan function (or wrapper step) that failed.
    public let call: String
    /// The raw `VkResult`, or `nil` when the wrapper raised the error itself.
    public let result: Int32?
    /// What the user can do about it, when there is something.
    public let hint: String?

    public init(call: String, result: VkResult, hint: String? = nil) {
        self.call = call
        self.result = result.rawValue
        self.hint = hint
    }

    public init(call: String, message: String) {
        self.call = call
        self.result = nil
        self.hint = message
    }

    public var description: String {
        var text = "Vulkan: \(call) failed"
        if let result { text += " with \(Self.name(of: result))" }
        if let hint { text += ": \(hint)" }
        return text
    }

    /// `VK_ERROR_OUT_OF_DEVICE_MEMORY` and friends by name.
    public static func name(of raw: Int32) -> String {
        switch VkResult(rawValue: raw) {
        case VK_SUCCESS: return "VK_SUCCESS"
        case VK_NOT_READY: return "VK_NOT_READY"
        case VK_TIMEOUT: return "VK_TIMEOUT"
        case VK_INCOMPLETE: return "VK_INCOMPLETE"
        case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY"
        case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY"
        case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED"
        case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST"
        case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED"
        case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT"
        case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT"
        case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT"
        case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER"
        case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS"
        case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED"
        case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL"
        case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY"
        default: return "VkResult(\(raw))"
        }
    }
}

/// Turns a `VkResult` into a thrown `VulkanError` naming `call`. The one place that does so.
@inlinable
func check(_ result: VkResult, _ call: @autoclosure () -> String) throws {
    if result != VK_SUCCESS { throw VulkanError(call: call(), result: result) }
}

/// A fixed-size C character array (as Vulkan's name fields import into Swift) as a `String`.
func string<T>(fromCTuple tuple: T) -> String {
    withUnsafeBytes(of: tuple) { raw in
        let bytes = raw.prefix { $0 != 0 }
        return String(decoding: bytes, as: UTF8.self)
    }
}
