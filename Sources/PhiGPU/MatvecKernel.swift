import Foundation
import PhiShaders
import VulkanKit

/// The decode product (one token) for a matrix: the staged kernel (Shaders/matvec_staged.comp,
/// x copied once per workgroup into shared memory) where the shapes and the device's shared memory
/// allow it, else the plain one (Shaders/matvec.comp). `PHI_GPU_MATVEC=plain|staged` forces one
/// (read with getenv on every product: building `ProcessInfo.environment` costs ~0.1 ms, which
/// decode steps, queued anew each token, cannot afford).
struct MatvecKernel {
    var shader: ShaderBinary
    /// Rows computed by each subgroup (the ROWS define of the variant).
    var rowsPerSubgroup: Int

    /// Columns of x the staged kernel holds in shared memory at a time (its CHUNK define).
    static let stagedChunk = 4096

    /// Shared memory the staged kernel declares for `bits`-bit weights: padded x and block sums.
    static func stagedSharedBytes(bits: Int) -> Int {
        let blockValues = 128 / bits, blocks = stagedChunk / blockValues
        return blocks * (blockValues / 4 + 1) * 16 + blocks * 4
    }

    /// The kernel for a `bits`-bit matrix of `columns` columns in groups of `groupSize`, or nil when
    /// neither decode kernel takes the shape (the general product does).
    static func choose(bits: Int, columns: Int, groupSize: Int, accumulate: Bool, device: PhysicalDevice,
                       override: String? = getenv("PHI_GPU_MATVEC").map { String(cString: $0) }) -> MatvecKernel? {
        let blockValues = 128 / bits
        guard columns % blockValues == 0 else { return nil }
        let stagedFits = groupSize % blockValues == 0 && stagedSharedBytes(bits: bits) <= device.sharedMemoryBytes
        let staged = stagedFits && override != "plain"
        let shader = switch (staged, bits == 4, accumulate) {
        case (true, true, false): ShaderLibrary.matvecStagedQ4
        case (true, true, true): ShaderLibrary.matvecStagedAddQ4
        case (true, false, false): ShaderLibrary.matvecStagedQ8
        case (true, false, true): ShaderLibrary.matvecStagedAddQ8
        case (false, true, false): ShaderLibrary.matvecQ4
        case (false, true, true): ShaderLibrary.matvecAddQ4
        case (false, false, false): ShaderLibrary.matvecQ8
        case (false, false, true): ShaderLibrary.matvecAddQ8
        }
        return MatvecKernel(shader: shader, rowsPerSubgroup: staged ? 4 : 2)  // the ROWS defines in variants.json
    }
}
