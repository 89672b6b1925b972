import PhiModel
import PhiShaders
import VulkanKit

/// A prompt (prefill) attention kernel as its variant in Shaders/variants.json defines it
/// (`THREADS`, `K_BLOCK`, `MAX_HEAD_DIM`; a test compares them): what `GPUBackend` dispatches and
/// checks a device against.
struct PromptAttention: Sendable {
    enum Kind: String, Sendable, CaseIterable {
        /// Shaders/attention.comp: Float32 arithmetic, 32 queries a workgroup, on every device.
        case scalar
        /// Shaders/attention_coopmat.comp: NV cooperative matrices, 16 queries a subgroup (specialized
        /// to the head dimension: constant 0 is headDim / 16), 48 keys a step for heads of up to 96
        /// dimensions and 32 for up to 128 (`variant(_:headDimension:)`).
        case cooperativeMatrix
    }

    let kind: Kind
    let shader: ShaderBinary
    /// Invocations per workgroup.
    let threads: Int
    /// Keys per step.
    let keyBlock: Int
    /// The largest head dimension it takes.
    let maxHeadDimension: Int
    /// Queries per workgroup.
    let queries: Int
    /// Shared memory it declares.
    let sharedBytes: Int

    /// Shared memory: the staged queries (a vec2 per pair of dimensions) and keys and values (a
    /// Float16 pair per word), rows padded by one element; the block's probabilities (padded);
    /// each invocation's running max and sum.
    static let scalar: PromptAttention = {
        let (threads, keyBlock, maxHeadDimension) = (256, 16, 128)
        let queries = threads / 8, stride = maxHeadDimension / 2 + 1
        return PromptAttention(kind: .scalar, shader: ShaderLibrary.attention, threads: threads, keyBlock: keyBlock,
                               maxHeadDimension: maxHeadDimension, queries: queries,
                               sharedBytes: queries * stride * 8 + 2 * keyBlock * stride * 4 + queries * (keyBlock + 1) * 4 + 2 * threads * 4)
    }()

    /// Shared memory: the staged keys and values of a block (or, before the first, every
    /// subgroup's queries) in Float16, rows padded by 8 values; per subgroup S in Float32 and P in
    /// Float16 (rows padded by 4 and 8) and a factor per query; a 16 × 16 table of row numbers.
    static let cooperativeMatrix: PromptAttention = {
        let (threads, keyBlock, maxHeadDimension) = (128, 32, 128)
        let subgroups = threads / 32
        let stagedRows = max(2 * keyBlock, 16 * subgroups)
        return PromptAttention(kind: .cooperativeMatrix, shader: ShaderLibrary.attentionCoopmat, threads: threads, keyBlock: keyBlock,
                               maxHeadDimension: maxHeadDimension, queries: 16 * subgroups,
                               sharedBytes: stagedRows * (maxHeadDimension + 8) * 2
                                   + subgroups * 16 * (4 * (keyBlock + 4) + 2 * (keyBlock + 8) + 4) + 256 * 4)
    }()

    /// The cooperative kernel for heads of at most 96 dimensions (Phi-3.5-mini): 48 keys a step
    /// instead of 32, which rows of 96 dimensions leave the shared memory for (41,728 bytes). On an
    /// H200 (BENCHMARKS.md, thirteenth session) pp512 at depth 4096 went from 9,763-9,812 to
    /// 10,148-10,192 t/s and pp2048 from 13,682-13,739 to 13,895-13,907, pp512 unchanged. With rows of
    /// 128 dimensions 48 keys fit too (47,872 bytes, 254 registers), but Phi-4-mini's pp512 lost
    /// 0.5% (at depth 4096 it gained 1.6%), so wider heads keep 32.
    static let cooperativeMatrixNarrow: PromptAttention = {
        let (threads, keyBlock, maxHeadDimension) = (128, 48, 96)
        let subgroups = threads / 32
        let stagedRows = max(2 * keyBlock, 16 * subgroups)
        return PromptAttention(kind: .cooperativeMatrix, shader: ShaderLibrary.attentionCoopmatK48D96, threads: threads,
                               keyBlock: keyBlock, maxHeadDimension: maxHeadDimension, queries: 16 * subgroups,
                               sharedBytes: stagedRows * (maxHeadDimension + 8) * 2
                                   + subgroups * 16 * (4 * (keyBlock + 4) + 2 * (keyBlock + 8) + 4) + 256 * 4)
    }()

    /// The kernel of `kind` for heads of `headDimension`: the cooperative kind has two variants.
    static func variant(_ kind: Kind, headDimension: Int) -> PromptAttention {
        switch kind {
        case .scalar: scalar
        case .cooperativeMatrix: headDimension <= cooperativeMatrixNarrow.maxHeadDimension ? cooperativeMatrixNarrow : cooperativeMatrix
        }
    }

    /// Why this kernel cannot run on `device` for heads of `headDimension`, or nil when it can.
    func unmetNeeds(on device: Device, headDimension: Int) -> String? {
        let physical = device.physical
        let multiple = kind == .cooperativeMatrix ? 16 : 8
        if headDimension % multiple != 0 || headDimension > maxHeadDimension {
            return "head dimension \(headDimension): it needs a multiple of \(multiple) up to \(maxHeadDimension)"
        }
        if physical.maxWorkgroupInvocations < threads || physical.sharedMemoryBytes < sharedBytes {
            return "\(physical.name) offers \(physical.maxWorkgroupInvocations) invocations and \(physical.sharedMemoryBytes) bytes of "
                + "shared memory; it needs \(threads) and \(sharedBytes)"
        }
        if kind == .cooperativeMatrix,
           !(device.enabled.cooperativeMatrixNV && device.enabled.float16 && physical.subgroupSize == 32) {
            return "\(physical.name) lacks VK_NV_cooperative_matrix, Float16 arithmetic or 32-wide subgroups"
        }
        return nil
    }

    /// Whether the cooperative kernel's workgroups each take two of the `groups` groups of
    /// `queries` queries of each of `heads` heads (the last and the first, and so on): where the
    /// prompt starts before position groups · queries, so that the groups' key counts differ by more
    /// than a factor of 2, and the unpaired workgroups would be more than the device's
    /// `multiprocessors` (fewer run side by side anyway). Each workgroup then does about the same
    /// work. On an H200 at Phi-3.5-mini's shapes from position 0 the attention took 45 µs against 64
    /// at 512 tokens, 156 against 190 at 1,024, 561 against 599-631 at 2,048 (BENCHMARKS.md,
    /// fourteenth session). `PHI_GPU_ATTENTION_PAIRS=0` or `1` forces it.
    static func pairs(groups: Int, heads: Int, startPosition: Int, queries: Int, multiprocessors: Int?,
                      environment: [String: String] = PrefillKernel.processEnvironment) -> Bool {
        if let forced = environment[pairsVariable] { return forced == "1" && groups > 1 }
        return groups > 1 && startPosition < groups * queries && groups * heads > (multiprocessors ?? 0)
    }

    /// The environment variable that forces `pairs` on (`1`) or off (`0`), for measurements.
    static let pairsVariable = "PHI_GPU_ATTENTION_PAIRS"

    /// Picks the prompt attention by hand, for measurements and checks: `scalar` or
    /// `cooperativeMatrix`; unset, the best that runs.
    static let environmentVariable = "PHI_GPU_PROMPT_ATTENTION"

    /// The kernel for heads of `headDimension` on `device`: `forced` (tests) or the one the
    /// environment names, else cooperative matrices where they run, else the scalar kernel. Throws
    /// with what is missing when none can run, or the named one cannot.
    static func choose(device: Device, headDimension: Int, forced: Kind? = nil,
                       environment: [String: String] = PrefillKernel.processEnvironment) throws -> PromptAttention {
        var requested = forced
        if requested == nil, let name = environment[environmentVariable], !name.isEmpty {
            guard let kind = Kind(rawValue: name) else {
                throw PrefillKernelNotAvailable(setting: "\(environmentVariable)=\(name)", reason:
                    "not a prompt attention; use one of " + Kind.allCases.map(\.rawValue).joined(separator: ", "))
            }
            requested = kind
        }
        if let requested {
            let kernel = variant(requested, headDimension: headDimension)
            if let unmet = kernel.unmetNeeds(on: device, headDimension: headDimension) {
                throw PrefillKernelNotAvailable(setting: "\(environmentVariable)=\(requested.rawValue)", reason:
                    "\(unmet); unset it to choose automatically")
            }
            return kernel
        }
        let cooperative = variant(.cooperativeMatrix, headDimension: headDimension)
        if cooperative.unmetNeeds(on: device, headDimension: headDimension) == nil { return cooperative }
        if let unmet = scalar.unmetNeeds(on: device, headDimension: headDimension) {
            throw BackendError.unsupportedWeight(name: "attention", reason: "the GPU's prompt attention cannot run: \(unmet); use --cpu")
        }
        return scalar
    }
}
