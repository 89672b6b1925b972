import ArgumentParser
import Foundation
import VulkanKit

/// `phi-gpu devices`: every Vulkan device, its facts, and which one phi-gpu would choose.
struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the Vulkan devices and mark the one phi-gpu would use.",
        discussion: """
        A discrete GPU is preferred over an integrated one, then a virtual one. A CPU-type
        device (such as Mesa's llvmpipe) is listed, but phi-gpu runs its own CPU backend
        instead unless it is picked with --device. PHI_GPU_DEVICE=N picks device N too.

        Examples:
          phi-gpu devices
          phi-gpu devices --device 1
        """)

    @Option(name: .customLong("device"), help: "Mark device N as chosen, as `--device N` would for other commands.")
    var deviceIndex: Int?

    func run() throws {
        let instance: Instance
        do {
            instance = try Instance(validation: false)
        } catch {
            print("No Vulkan loader or driver: \(error)")
            print("phi-gpu would run on the CPU.")
            return
        }
        let devices = try instance.physicalDevices()
        guard !devices.isEmpty else {
            print("No Vulkan device found; phi-gpu would run on the CPU.")
            print("(Install your GPU's Vulkan driver, or mesa-vulkan-drivers for the software renderer.)")
            return
        }
        let chosen = try DeviceSelection.choose(from: devices, requested: deviceIndex)
        for device in devices {
            let mark = device.index == chosen?.index ? "*" : " "
            print("\(mark) [\(device.index)] \(device.name)")
            print("      type: \(device.kind.rawValue), Vulkan \(device.apiVersion), driver \(device.driverName) \(device.driverInfo)")
            print("      subgroup size: \(device.subgroupSize), shared memory: \(device.sharedMemoryBytes / 1024) KiB, max workgroup: \(device.maxWorkgroupInvocations)"
                  + (device.multiprocessors.map { ", multiprocessors: \($0)" } ?? ""))
            for (index, heap) in device.heaps.enumerated() {
                var line = "      heap \(index): \(Self.gibibytes(heap.size))\(heap.deviceLocal ? " device-local" : "")"
                if let budget = heap.budget { line += ", budget \(Self.gibibytes(budget))" }
                print(line)
            }
            let f = device.features
            let features: [(String, Bool)] = [
                ("fp16", f.float16), ("int8", f.int8), ("8-bit storage", f.storage8Bit), ("16-bit storage", f.storage16Bit),
                ("coopmat NV", f.cooperativeMatrixNV), ("coopmat KHR", f.cooperativeMatrixKHR),
                ("int dot product", f.integerDotProduct), ("memory budget", f.memoryBudget),
            ]
            print("      features: " + features.map { "\($0.0) \($0.1 ? "yes" : "no")" }.joined(separator: ", "))
        }
        if let chosen {
            if chosen.kind == .cpu && deviceIndex == nil && ProcessInfo.processInfo.environment[DeviceSelection.environmentVariable] == nil {
                print("The only device is a software renderer (\(chosen.name)): phi-gpu runs its CPU backend by default;")
                print("--device \(chosen.index) forces this device.")
            } else {
                print("phi-gpu would use device \(chosen.index): \(chosen.name).")
            }
        }
    }

    static func gibibytes(_ bytes: UInt64) -> String {
        String(format: "%.1f GiB", Double(bytes) / Double(1 << 30))
    }
}
