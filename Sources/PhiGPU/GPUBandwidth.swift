import PhiShaders
import VulkanKit

/// Measures the device's streaming read bandwidth with `Shaders/stream_read.comp`: the ceiling the
/// decode products are compared with in `phi-gpu bench kernels`.
public enum GPUBandwidth {
    /// Bytes per second read from a buffer of `byteCount` bytes, best of `repeats` timed runs
    /// (GPU timestamps around the dispatch).
    public static func measure(context: GPUContext, byteCount: Int, repeats: Int = 5) throws -> Double {
        let count = byteCount / 16
        let source = try Buffer(device: context.device, byteCount: count * 16, location: .deviceLocal, label: "bandwidth source")
        try source.fill(0x1234_5678)
        let workgroups = 4096
        let sink = try Buffer(device: context.device, byteCount: workgroups * 4, location: .deviceLocal, label: "bandwidth sink")
        let pipeline = try context.pipeline(ShaderLibrary.streamRead, bindings: 2,
                                            pushConstantSize: MemoryLayout<StreamReadConstants>.size, specialization: [256])
        let set = try context.descriptorSet(for: pipeline, buffers: [BufferBinding(source), BufferBinding(sink)])
        let timestamps = try TimestampQueryPool(device: context.device, count: 2)
        let pool = try CommandPool(device: context.device)
        let commands = try CommandBuffer(pool: pool)
        try commands.begin()
        commands.reset(timestamps)
        commands.writeTimestamp(timestamps, index: 0)
        commands.dispatch(pipeline, set: set, constants: StreamReadConstants(count: UInt32(count)), groups: (workgroups, 1, 1))
        commands.writeTimestamp(timestamps, index: 1)
        try commands.end()
        let best = try fastest(runs: repeats) {
            try context.device.submitAndWait(commands)
            let times = try timestamps.nanoseconds()
            return (times[1] - times[0]) * 1e-9
        }
        return Double(count * 16) / best
    }

    /// GPU seconds per read of `byteCount` bytes when reads are dispatched one after another, each
    /// followed by a barrier, cycling through `buffers` buffers so that the L2 cache cannot hold
    /// them: the ceiling of a decode product reading as many bytes, launch and barrier included.
    public static func secondsPerRead(context: GPUContext, byteCount: Int, buffers: Int = 4, dispatches: Int = 100) throws -> Double {
        let count = max(1, byteCount / 16)
        let sources = try (0..<buffers).map { _ in
            try Buffer(device: context.device, byteCount: count * 16, location: .deviceLocal, label: "bandwidth source")
        }
        for source in sources { try source.fill(0x1234_5678) }
        let workgroups = min(65535, max(1, (count + 1023) / 1024))  // four 16-byte loads per invocation
        let sink = try Buffer(device: context.device, byteCount: workgroups * 4, location: .deviceLocal, label: "bandwidth sink")
        let pipeline = try context.pipeline(ShaderLibrary.streamRead, bindings: 2,
                                            pushConstantSize: MemoryLayout<StreamReadConstants>.size, specialization: [256])
        let sets = try sources.map { try context.descriptorSet(for: pipeline, buffers: [BufferBinding($0), BufferBinding(sink)]) }
        let timestamps = try TimestampQueryPool(device: context.device, count: 2)
        let pool = try CommandPool(device: context.device)
        let commands = try CommandBuffer(pool: pool)
        try commands.begin()
        commands.reset(timestamps)
        commands.writeTimestamp(timestamps, index: 0)
        for index in 0..<dispatches {
            commands.dispatch(pipeline, set: sets[index % buffers], constants: StreamReadConstants(count: UInt32(count)),
                              groups: (workgroups, 1, 1))
            commands.barrier(from: .compute, to: .compute)
        }
        commands.writeTimestamp(timestamps, index: 1)
        try commands.end()
        return try fastest(runs: 3) {
            try context.device.submitAndWait(commands)
            let times = try timestamps.nanoseconds()
            return (times[1] - times[0]) * 1e-9 / Double(dispatches)
        }
    }

    /// The GPU raises its clock only under sustained work: after a pause (the host checking
    /// results) an H200 ran at 345 instead of 1,980 MHz for the next few milliseconds of kernels,
    /// 4-5× slower (BENCHMARKS.md, eighth session). So a measurement is repeated for at least this
    /// long, and the fastest run counts.
    public static let warmUpSeconds = 0.25

    /// The smallest of `measure`'s results over at least `runs` runs and `warmUpSeconds`.
    static func fastest(runs: Int, _ measure: () throws -> Double) throws -> Double {
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(Int(warmUpSeconds * 1000))
        var best = Double.infinity
        var done = 0
        while done < runs || clock.now < deadline {
            best = min(best, try measure())
            done += 1
        }
        return best
    }
}
