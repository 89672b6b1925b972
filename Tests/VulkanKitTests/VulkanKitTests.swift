import PhiShaders
import TestSupport
import VulkanKit
import XCTest

/// Opens the Vulkan device the tests run on (llvmpipe in CI), with validation when PHI_GPU_VALIDATE=1.
/// In CI a missing device fails the test; elsewhere it skips it.
func openTestDevice() throws -> Device {
    let instance = try Instance()
    let devices = try instance.physicalDevices()
    guard let chosen = try DeviceSelection.choose(from: devices) else {
        if TestPaths.isCI { throw VulkanError(call: "test setup", message: "no Vulkan device found in CI; install mesa-vulkan-drivers") }
        throw XCTSkip("no Vulkan device on this machine")
    }
    return try Device(physical: chosen)
}

final class VulkanKitTests: XCTestCase {
    func testEnumeratesDevicesWithTheirFacts() throws {
        let device = try openTestDevice()
        let physical = device.physical
        print("Vulkan device used by the tests: \(physical.name) (\(physical.kind.rawValue), \(physical.driverName), Vulkan \(physical.apiVersion)), validation \(device.instance.validationEnabled ? "on" : "off")")
        XCTAssertFalse(physical.name.isEmpty)
        XCTAssertGreaterThan(physical.subgroupSize, 0)
        XCTAssertGreaterThanOrEqual(physical.sharedMemoryBytes, 16384)
        XCTAssertFalse(physical.heaps.isEmpty)
        XCTAssertGreaterThan(physical.heaps.reduce(0) { $0 + $1.size }, 0)
        if TestPaths.isCI {
            XCTAssertTrue(physical.name.contains("llvmpipe"), "CI runs the GPU tests on llvmpipe, got \(physical.name)")
            XCTAssertTrue(device.instance.validationEnabled, "CI runs the GPU tests with validation layers")
        }
    }

    func testDeviceSelectionPrefersDiscreteAndHonoursOverrides() throws {
        let instance = try Instance(validation: false)
        let devices = try instance.physicalDevices()
        guard !devices.isEmpty else { throw XCTSkip("no Vulkan device") }
        let best = try XCTUnwrap(DeviceSelection.choose(from: devices, environment: [:]))
        XCTAssertEqual(best.kind.preference, devices.map(\.kind.preference).max())
        XCTAssertEqual(try DeviceSelection.choose(from: devices, requested: 0, environment: [:])?.index, 0)
        XCTAssertEqual(try DeviceSelection.choose(from: devices, environment: ["PHI_GPU_DEVICE": "0"])?.index, 0)
        XCTAssertThrowsError(try DeviceSelection.choose(from: devices, requested: devices.count, environment: [:])) { error in
            XCTAssertTrue("\(error)".contains("no Vulkan device \(devices.count)"), "\(error)")
        }
        XCTAssertThrowsError(try DeviceSelection.choose(from: devices, environment: ["PHI_GPU_DEVICE": "gpu"]))
        XCTAssertNil(try DeviceSelection.choose(from: [], environment: [:]))
    }

    func testStagedUploadInChunksAndReadBack() throws {
        let device = try openTestDevice()
        var random = SeededRandom(seed: 7)
        let values = random.floats(100_003)
        let buffer = try Buffer(device: device, byteCount: values.count * 4, location: .deviceLocal)
        var progress: [Int] = []
        try values.withUnsafeBytes { try buffer.upload($0, chunkBytes: 65536) { progress.append($0) } }
        XCTAssertEqual(progress.count, (values.count * 4 + 65535) / 65536)
        XCTAssertEqual(progress.last, values.count * 4)
        XCTAssertEqual(try buffer.read(Float.self, count: values.count), values)
        XCTAssertEqual(try buffer.read(Float.self, count: 10, offset: 400), Array(values[100..<110]))
        XCTAssertThrowsError(try buffer.read(Float.self, count: values.count + 1))
        XCTAssertEqual(device.instance.validationErrorCount, 0, device.instance.validationErrors.joined(separator: "\n"))
    }

    func testCommandBufferRecordedOnceRunsManyTimesWithTimestamps() throws {
        let device = try openTestDevice()
        let a = try Buffer(device: device, byteCount: 1024, location: .deviceLocal)
        let b = try Buffer(device: device, byteCount: 1024, location: .hostVisible)
        let source = (0..<256).map { UInt32($0 * 3) }
        try a.upload(source)
        let pool = try CommandPool(device: device)
        let commands = try CommandBuffer(pool: pool)
        let timestamps = try TimestampQueryPool(device: device, count: 2)
        try commands.begin()
        commands.reset(timestamps)
        commands.writeTimestamp(timestamps, index: 0)
        commands.copy(from: a, to: b, byteCount: 1024)
        commands.writeTimestamp(timestamps, index: 1)
        try commands.end()
        let fence = try Fence(device: device)
        for round in 0..<3 {
            try b.fill(0xFFFF_FFFF)
            try device.submit(commands, signalling: fence)
            try fence.wait()
            XCTAssertEqual(try b.read(UInt32.self, count: 256), source, "round \(round)")
            let times = try timestamps.nanoseconds()
            XCTAssertGreaterThanOrEqual(times[1], times[0])
        }
        XCTAssertEqual(device.instance.validationErrorCount, 0, device.instance.validationErrors.joined(separator: "\n"))
    }

    func testReflectionReadsThePushConstantBlockAndRejectsGarbage() throws {
        let reflected = try SPIRVReflection(words: ShaderLibrary.rmsNorm.words, name: "rmsNorm")
        XCTAssertEqual(reflected.pushConstantSize, 12)
        XCTAssertThrowsError(try SPIRVReflection(words: [1, 2, 3, 4, 5, 6], name: "garbage")) { error in
            XCTAssertTrue("\(error)".contains("garbage"))
        }
        XCTAssertFalse(ShaderLibrary.all.isEmpty)
        XCTAssertTrue(ShaderLibrary.all.allSatisfy { $0.words.first == 0x0723_0203 }, "every embedded shader is SPIR-V")
    }

    func testPipelineRefusesMismatchedPushConstants() throws {
        let device = try openTestDevice()
        XCTAssertThrowsError(try ComputePipeline(device: device, name: "rmsNorm", spirv: ShaderLibrary.rmsNorm.words,
                                                 bindingCount: 3, pushConstantSize: 16, specialization: [64])) { error in
            XCTAssertTrue("\(error)".contains("12 bytes"), "\(error)")
        }
    }
}
