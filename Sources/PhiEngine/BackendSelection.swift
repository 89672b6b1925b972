import Foundation
import PhiCPU
import PhiGPU
import PhiModel
import VulkanKit

/// Chooses the backend a command runs on: a usable GPU when there is one, else the CPU.
public enum BackendSelection {
    /// What the user asked for.
    public struct Request: Sendable {
        /// `--cpu`: the CPU even when a GPU exists.
        public var forceCPU = false
        /// `--device N`: that Vulkan device (software ones included); an error if it cannot be used.
        public var deviceIndex: Int?
        /// CPU threads; all cores when nil.
        public var threads: Int?

        public init(forceCPU: Bool = false, deviceIndex: Int? = nil, threads: Int? = nil) {
            self.forceCPU = forceCPU
            self.deviceIndex = deviceIndex
            self.threads = threads
        }
    }

    /// The backend for `request`. Without `--cpu` or `--device`, a GPU is used when Vulkan offers a
    /// real one (or `PHI_GPU_DEVICE` names one); otherwise the CPU, and `notice` gets one line saying why.
    public static func make(_ request: Request, notice: (String) -> Void) throws -> any InferenceBackend {
        let cpu = { CPUBackend(threads: request.threads ?? ProcessInfo.processInfo.activeProcessorCount) }
        if request.forceCPU { return cpu() }
        let pinned = request.deviceIndex != nil
            || !(ProcessInfo.processInfo.environment[DeviceSelection.environmentVariable] ?? "").isEmpty
        do {
            let context = try GPUContext(deviceIndex: request.deviceIndex, allowCPUDevices: pinned)
            return try GPUBackend(context: context)
        } catch let error as GPUUnavailable {
            notice("phi-gpu: \(error); running on the CPU (\(cpu().name)).")
            return cpu()
        } catch let error as VulkanError where !pinned && error.call == "vkCreateInstance" {
            notice("phi-gpu: no Vulkan driver (\(error)); running on the CPU.")
            return cpu()
        }
    }
}
