import PhiModel
import VulkanKit

// What GPUBackend queues between synchronisations, and what it reports about it.

/// A queued product's arguments, kept so a following residual add can be fused into it.
struct QueuedProduct {
    var index: Int
    var x: BackendTensor
    var rows: Range<Int>
    var weight: WeightName
    var out: BackendTensor
    /// The prologue fused into the product, which its re-queueing keeps.
    var prologue: QueuedPrologue?
    /// Commands the product queued, ending at `index` (a prefill product's conversion of x to Float16 too).
    var commands = 1
}

/// A queued one-token RMSNorm or SiLU gate that the decode product reading its output may compute
/// itself: `input` is what the operation reads, `out` what it writes.
struct QueuedPrologue {
    var kind: MatvecKernel.Prologue
    var index: Int
    var input: BackendTensor
    /// The RMSNorm weight, (columns) Float32.
    var norm: Buffer?
    var out: BackendTensor
}

/// A queued prompt RMSNorm or SiLU gate that also wrote its output's first `rows` rows as Float16
/// pairs into `halfInputs`, for the cooperative product that reads `tensor` next.
struct QueuedHalfCopy {
    var index: Int
    var tensor: BackendTensor
    var rows: Int
}

/// A queued RoPE-and-cache of a few tokens, which the split attention that follows may do itself.
struct QueuedRotation {
    var index: Int
    var qkv: BackendTensor
    var queries: BackendTensor
    var layer: Int
    var startPosition: Int
    var count: Int
}

/// Workgroup counts of a dispatch.
struct Groups: Equatable {
    var x: Int, y: Int, z: Int
}

/// One queued GPU command; equal when it would record the same thing.
enum QueuedCommand: Equatable {
    case dispatch(pipeline: ComputePipeline, set: DescriptorSet, constants: [UInt8], groups: Groups)
    case copy(source: Buffer, destination: Buffer, byteCount: Int, sourceOffset: Int)

    static func == (a: QueuedCommand, b: QueuedCommand) -> Bool {
        switch (a, b) {
        case let (.dispatch(p1, s1, c1, g1), .dispatch(p2, s2, c2, g2)):
            return p1 === p2 && s1 === s2 && c1 == c2 && g1 == g2
        case let (.copy(s1, d1, n1, o1), .copy(s2, d2, n2, o2)):
            return s1 === s2 && d1 === d2 && n1 == n2 && o1 == o2
        default:
            return false
        }
    }
}

/// The model and KV cache do not fit the GPU's memory: how much is needed and available, and what to do.
public struct GPUOutOfMemory: Error, CustomStringConvertible {
    public let device: String
    public let needed: Int
    public let available: UInt64
    public let cacheBytes: Int
    public let contextLength: Int
    /// Tokens a prompt goes through the layers at a time, and their activations' bytes.
    public let batch: Int
    public let activationBytes: Int

    public var description: String {
        let gib = { (bytes: Double) in String(format: "%.2f GiB", bytes / Double(1 << 30)) }
        return "not enough GPU memory on \(device): the model and a KV cache of \(contextLength) tokens need \(gib(Double(needed))) "
            + "(\(gib(Double(cacheBytes))) of it the cache, \(gib(Double(activationBytes))) the activations of prompts taken \(batch) tokens at a time), "
            + "\(gib(Double(available))) is available; use a smaller --ctx, PHI_GPU_BATCH=512 (fewer prompt tokens at a time), or --cpu"
    }
}

extension QueuedCommand {
    /// Per-kernel GPU time from the timestamps written after each of `commands`, slowest first.
    static func kernelTimes(_ commands: [QueuedCommand], nanoseconds: [Double]) -> [KernelTime] {
        var byName: [String: KernelTime] = [:]
        for (index, command) in commands.enumerated() where index + 1 < nanoseconds.count {
            let name = switch command {
            case .dispatch(let pipeline, _, _, _): pipeline.name
            case .copy: "copy"
            }
            let seconds = max(0, nanoseconds[index + 1] - nanoseconds[index]) * 1e-9
            byName[name, default: KernelTime(name: name, dispatches: 0, seconds: 0)].dispatches += 1
            byName[name]?.seconds += seconds
        }
        return byName.values.sorted { $0.seconds > $1.seconds }
    }
}
