import Foundation
import PhiShaders
import VulkanKit

/// How decode products are chosen and tuned. `fromEnvironment` reads the overrides once:
/// `PHI_GPU_MATVEC=plain` forces the plain kernel; `PHI_GPU_MATVEC_INT=0` floating-point arithmetic
/// in staged products on devices with integer dot products; `PHI_GPU_MATVEC_ROWS` and
/// `PHI_GPU_MATVEC_UNROLL` set the staged kernel's rows per subgroup and blocks in flight per lane,
/// `PHI_GPU_MATVEC_SUBGROUPS` its subgroups per workgroup.
public struct DecodeProductSettings: Sendable, Equatable {
    /// Use the plain kernel (Shaders/matvec.comp) even where the staged one fits.
    public var plain = false
    /// Multiply with integer dot products where the device has them (x in two signed bytes per
    /// value), rather than in Float16 pairs (4-bit) or Float32 (8-bit): faster and more exact.
    public var integerDot = true
    /// Rows per subgroup of the staged kernel (1-16). Measured best on an H100 at the Phi-3.5-mini
    /// shapes (BENCHMARKS.md): 8 subgroups × 4 rows, one block in flight.
    public var rowsPerSubgroup = 4
    /// 16-byte blocks each lane loads per row before using any (1-8).
    public var blocksInFlight = 1
    /// Subgroups per workgroup of the staged kernel (1-32).
    public var subgroups = 8
    /// Halve the rows per subgroup of a staged product whose workgroups would be fewer than the
    /// device's multiprocessors (attention output at Phi-3.5-mini's shapes: 96 workgroups of 32
    /// rows on an H200's 132), down to 1. `PHI_GPU_MATVEC_FILL=0` turns it off.
    public var fillMultiprocessors = true

    public init() {}

    /// The defaults with the environment's overrides.
    public static let fromEnvironment: DecodeProductSettings = {
        func value(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        var settings = DecodeProductSettings()
        settings.plain = value("PHI_GPU_MATVEC") == "plain"
        settings.integerDot = value("PHI_GPU_MATVEC_INT") != "0"
        if let rows = value("PHI_GPU_MATVEC_ROWS").flatMap(Int.init) { settings.rowsPerSubgroup = rows }
        if let unroll = value("PHI_GPU_MATVEC_UNROLL").flatMap(Int.init) { settings.blocksInFlight = unroll }
        if let subgroups = value("PHI_GPU_MATVEC_SUBGROUPS").flatMap(Int.init) { settings.subgroups = subgroups }
        settings.fillMultiprocessors = value("PHI_GPU_MATVEC_FILL") != "0"
        return settings
    }()
}

/// The decode product (one token) for a matrix: the staged kernel (Shaders/matvec_staged.comp,
/// x copied once per workgroup into shared memory) where the shapes and the device's shared memory
/// allow it, else the plain one (Shaders/matvec.comp).
struct MatvecKernel {
    /// What the staged kernel computes x from, fusing the operation that would have produced it.
    enum Prologue: Equatable {
        /// x is the input row.
        case none
        /// x = RMSNorm(input row) · weight.
        case norm
        /// x = silu(gate) · up of the input row gate | up.
        case silu
    }

    var shader: ShaderBinary
    /// Rows computed by each subgroup.
    var rowsPerSubgroup: Int
    /// Subgroups per workgroup (each workgroup stages x once for all of them).
    var subgroups: Int
    /// Specialization constants after the workgroup size (the staged kernel's ROWS and UNROLL).
    var specialization: [UInt32]

    /// Columns of x the staged kernel holds in shared memory at a time (its CHUNK define).
    static let stagedChunk = 4096

    /// Shared memory the staged kernel declares for `bits`-bit weights: padded x (4-bit: a
    /// Float16 pair per value pair, 16 bytes per word; 8-bit: a float per value), each block's
    /// (Σ x, scale) and the norm's subgroup sums.
    static func stagedSharedBytes(bits: Int) -> Int {
        let blockValues = 128 / bits, blocks = stagedChunk / blockValues
        let stagedPerBlock = bits == 4 ? 4 + 1 : blockValues / 4 + 1  // 16-byte entries, one of them padding
        return blocks * stagedPerBlock * 16 + blocks * 8 + 64 * 4
    }

    /// The kernel for a `bits`-bit matrix of `columns` columns in groups of `groupSize`, or nil when
    /// no decode kernel takes the shape (the general product does) or the prologue cannot be fused.
    /// With `rows` and `parts` (the workgroups along the columns), the rows per subgroup are halved
    /// while the workgroups would be fewer than the device's multiprocessors (`fillMultiprocessors`).
    static func choose(bits: Int, columns: Int, groupSize: Int, accumulate: Bool, prologue: Prologue = .none,
                       rows: Int? = nil, parts: Int = 1, settings: DecodeProductSettings, device: Device) -> MatvecKernel? {
        let blockValues = 128 / bits
        guard columns % blockValues == 0 else { return nil }
        // The 4-bit staged kernel multiplies in Float16.
        let integerDot = settings.integerDot && device.enabled.integerDotProduct
        // A block's lanes reduce it together: the subgroup holds whole blocks (of blockValues / 4 lanes).
        let stagedFits = groupSize % blockValues == 0 && stagedSharedBytes(bits: bits) <= device.physical.sharedMemoryBytes
            && device.physical.subgroupSize % (blockValues / 4) == 0
            && (bits != 4 || device.enabled.float16 || integerDot)
        let staged = stagedFits && !settings.plain
        guard prologue == .none || (staged && (prologue != .norm || columns <= stagedChunk)) else { return nil }
        guard staged else {
            let shader = switch (bits == 4, accumulate) {
            case (true, false): ShaderLibrary.matvecQ4
            case (true, true): ShaderLibrary.matvecAddQ4
            case (false, false): ShaderLibrary.matvecQ8
            case (false, true): ShaderLibrary.matvecAddQ8
            }
            return MatvecKernel(shader: shader, rowsPerSubgroup: 2, subgroups: 4, specialization: [])  // ROWS of matvec.comp
        }
        let index = (prologue == .norm ? 4 : prologue == .silu ? 8 : 0) + (accumulate ? 2 : 0) + (bits == 4 ? 0 : 1)
        let shader = (integerDot ? integerDotShaders : stagedShaders)[index]
        var rowsPerSubgroup = min(max(settings.rowsPerSubgroup, 1), 16)
        let unroll = min(max(settings.blocksInFlight, 1), 8)
        let subgroups = min(max(settings.subgroups, 1), 32)
        if settings.fillMultiprocessors, let rows, let multiprocessors = device.physical.multiprocessors {
            rowsPerSubgroup = filling(multiprocessors, rows: rows, rowsPerSubgroup: rowsPerSubgroup, subgroups: subgroups, parts: parts)
        }
        return MatvecKernel(shader: shader, rowsPerSubgroup: rowsPerSubgroup, subgroups: subgroups,
                            specialization: [UInt32(rowsPerSubgroup), UInt32(unroll)])
    }

    /// `rowsPerSubgroup` halved while a product of `rows` rows in workgroups of `subgroups`
    /// subgroups, `parts` along its columns, would have fewer workgroups than `multiprocessors`.
    /// On an H200 the attention output (3,072 rows) in 192 workgroups instead of 96 (BENCHMARKS.md,
    /// fourteenth session).
    static func filling(_ multiprocessors: Int, rows: Int, rowsPerSubgroup: Int, subgroups: Int, parts: Int) -> Int {
        var result = max(rowsPerSubgroup, 1)
        while result > 1, (rows + subgroups * result - 1) / (subgroups * result) * parts < multiprocessors {
            result /= 2
        }
        return result
    }

    /// The staged variants by prologue (none, norm, silu), then accumulate (no, yes), then bits (4, 8).
    private static let stagedShaders = [
        ShaderLibrary.matvecStagedQ4, ShaderLibrary.matvecStagedQ8, ShaderLibrary.matvecStagedAddQ4, ShaderLibrary.matvecStagedAddQ8,
        ShaderLibrary.matvecStagedNormQ4, ShaderLibrary.matvecStagedNormQ8,
        ShaderLibrary.matvecStagedNormAddQ4, ShaderLibrary.matvecStagedNormAddQ8,
        ShaderLibrary.matvecStagedSiluQ4, ShaderLibrary.matvecStagedSiluQ8,
        ShaderLibrary.matvecStagedSiluAddQ4, ShaderLibrary.matvecStagedSiluAddQ8,
    ]

    /// The staged variants with integer dot products (INT_DOT), in the order of `stagedShaders`.
    private static let integerDotShaders = [
        ShaderLibrary.matvecStagedQ4Int, ShaderLibrary.matvecStagedQ8Int, ShaderLibrary.matvecStagedAddQ4Int,
        ShaderLibrary.matvecStagedAddQ8Int,
        ShaderLibrary.matvecStagedNormQ4Int, ShaderLibrary.matvecStagedNormQ8Int,
        ShaderLibrary.matvecStagedNormAddQ4Int, ShaderLibrary.matvecStagedNormAddQ8Int,
        ShaderLibrary.matvecStagedSiluQ4Int, ShaderLibrary.matvecStagedSiluQ8Int,
        ShaderLibrary.matvecStagedSiluAddQ4Int, ShaderLibrary.matvecStagedSiluAddQ8Int,
    ]

}
