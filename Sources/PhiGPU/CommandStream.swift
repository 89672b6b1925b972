import Foundation
import PhiModel
import VulkanKit

/// The GPU commands queued between two synchronisations, submitted in segments while they are
/// still being queued, and replayed from recordings when a step repeats.
///
/// Once enough commands wait behind the newest one, they are recorded into a command buffer of
/// their own (a barrier after each) and submitted without waiting, so the GPU starts on a step
/// while the host is still queueing the rest of it. A step's first segment is short
/// (`firstSegmentLength`) and each next one twice as long, up to `segmentLength`: the GPU starts
/// early, and the host (which queues a command in about a third of the time the GPU runs one on
/// an H200) keeps ahead. Barriers order work across submissions of one queue, and the fence of the
/// last submission covers every earlier one. The newest command is never submitted early: the
/// backend may still replace it (fusing the next operation into it). Each segment's command buffer
/// is kept with what it recorded; when the same position of the next step queues the same commands
/// (every decode step of one shape), it is submitted again as it is.
final class CommandStream {
    private let device: Device
    private let pool: CommandPool
    private let fence: Fence
    /// The most commands of one early submission; 0 submits everything at the synchronisation.
    let segmentLength: Int
    /// Commands of a step's first early submission; each next one doubles, up to `segmentLength`.
    let firstSegmentLength = 2
    /// This step's commands; those before `submitted` are on the GPU already.
    private(set) var queued: [QueuedCommand] = []
    private var submitted = 0
    private var segments: [Segment] = []
    private var segmentsUsed = 0
    /// Command buffers recorded so far (a replayed one does not count).
    private(set) var recordings = 0
    /// Submissions so far.
    private(set) var submissions = 0
    /// Host seconds from the first command of the last synchronisation to its final submit.
    private(set) var lastQueueSeconds = 0.0
    private let clock = ContinuousClock()
    private var queueStart = ContinuousClock.now
    /// While true, nothing is submitted early and `finish` records a timestamp after each command.
    var profiling = false
    private(set) var lastProfile: [KernelTime] = []
    private var timestamps: TimestampQueryPool?  // (commands + 1) timestamps while profiling

    /// A command buffer and what it holds.
    private final class Segment {
        let buffer: CommandBuffer
        var holds: Recording?
        init(buffer: CommandBuffer) { self.buffer = buffer }
    }

    /// What a segment's command buffer was recorded from; equal recordings record the same thing.
    private struct Recording: Equatable {
        var commands: ArraySlice<QueuedCommand>
        /// Whether the command after the segment is a copy (its last barrier then includes transfers).
        var nextIsCopy: Bool
        var fullBarriers: Bool
    }

    /// `PHI_GPU_SEGMENT` overrides `segmentLength` (0: no early submissions).
    init(device: Device, segmentLength: Int = 24) throws {
        self.device = device
        self.segmentLength = ProcessInfo.processInfo.environment["PHI_GPU_SEGMENT"].flatMap(Int.init) ?? segmentLength
        pool = try CommandPool(device: device)
        fence = try Fence(device: device)
    }

    /// Queues `command` behind the others; submits a segment when enough wait behind it.
    /// `fullBarriers` chooses full barriers (prompts) or compute-to-compute ones (decode steps).
    func append(_ command: QueuedCommand, fullBarriers: Bool) throws {
        if queued.isEmpty { queueStart = clock.now }
        queued.append(command)
        let length = min(segmentLength, firstSegmentLength << min(segmentsUsed, 16))
        guard !profiling, segmentLength > 0, queued.count - 1 - submitted >= length else { return }
        do {
            try submit(upTo: queued.count - 1, fullBarriers: fullBarriers, fence: nil)
        } catch {
            try? device.waitIdle()
            reset()
            forgetRecordings()
            throw error
        }
    }

    /// Drops the newest command (which is never submitted before the next one is queued).
    func removeLast() {
        guard queued.count > submitted else { return }
        queued.removeLast()
    }

    /// Forgets every recording, so that the next steps record afresh.
    func forgetRecordings() {
        for segment in segments { segment.holds = nil }
    }

    /// Submits everything not yet submitted and waits until the GPU has finished it all.
    func finish(fullBarriers: Bool) throws {
        guard !queued.isEmpty else { return }
        let flushStart = clock.now
        let elapsed = (flushStart - queueStart).components
        lastQueueSeconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18
        let profiled = profiling && submitted == 0 ? try timestampPool(count: queued.count + 1) : nil
        let commands = queued
        do {
            try submit(upTo: queued.count, fullBarriers: fullBarriers, fence: fence, timestamps: profiled)
            try fence.wait()
        } catch {
            // Whatever was submitted may still run: wait for it before anything is re-recorded.
            try? device.waitIdle()
            reset()
            forgetRecordings()
            throw error
        }
        reset()
        if let profiled {
            lastProfile = try QueuedCommand.kernelTimes(commands, nanoseconds: profiled.nanoseconds(first: commands.count + 1))
        }
    }

    private func reset() {
        queued.removeAll(keepingCapacity: true)
        submitted = 0
        segmentsUsed = 0
    }

    /// Records (or reuses) the command buffer of queued[submitted..<end] and submits it.
    private func submit(upTo end: Int, fullBarriers: Bool, fence: Fence?, timestamps: TimestampQueryPool? = nil) throws {
        let nextIsCopy = end < queued.count && { if case .copy = queued[end] { true } else { false } }()
        let recording = Recording(commands: queued[submitted..<end], nextIsCopy: nextIsCopy, fullBarriers: fullBarriers)
        if segmentsUsed == segments.count {
            segments.append(Segment(buffer: try CommandBuffer(pool: pool)))
        }
        let segment = segments[segmentsUsed]
        segmentsUsed += 1
        if segment.holds != recording || timestamps != nil {
            try record(recording, into: segment.buffer, timestamps: timestamps)
            // A recording with timestamps is not kept: the next step records afresh without them.
            segment.holds = timestamps == nil ? recording : nil
            recordings += 1
        }
        try device.submit(segment.buffer, signalling: fence)
        submissions += 1
        submitted = end
    }

    private func record(_ recording: Recording, into commands: CommandBuffer, timestamps: TimestampQueryPool?) throws {
        try commands.begin()
        if let timestamps {
            commands.reset(timestamps)
            commands.writeTimestamp(timestamps, index: 0)
        }
        let list = recording.commands
        for (offset, command) in list.enumerated() {
            let index = list.startIndex + offset
            let nextIsCopy = index + 1 < list.endIndex
                ? { if case .copy = list[index + 1] { true } else { false } }() : recording.nextIsCopy
            switch command {
            case .dispatch(let pipeline, let set, let constants, let groups):
                commands.dispatch(pipeline, set: set, constantBytes: constants, groups: (groups.x, groups.y, groups.z))
                if recording.fullBarriers {
                    commands.barrier()
                } else {
                    commands.barrier(from: .compute, to: nextIsCopy ? [.compute, .transfer] : .compute)
                }
            case .copy(let source, let destination, let byteCount, let sourceOffset):
                commands.copy(from: source, to: destination, byteCount: byteCount, sourceOffset: sourceOffset)
                commands.barrier()
            }
            if let timestamps { commands.writeTimestamp(timestamps, index: offset + 1) }
        }
        try commands.end()
    }

    /// A query pool of at least `count` timestamps, grown when needed.
    private func timestampPool(count: Int) throws -> TimestampQueryPool {
        if let timestamps, timestamps.count >= count { return timestamps }
        let pool = try TimestampQueryPool(device: device, count: max(count, 512))
        timestamps = pool
        return pool
    }
}
