import Foundation
import PhiModel
import PhiShaders
import VulkanKit

/// One tiled prefill kernel variant (`Shaders/matmul_tiled.comp` or `Shaders/matmul_coopmat.comp`,
/// with the defines `Shaders/variants.json` gives it): the tile of out a workgroup computes and
/// what it needs of the device. Its push constants are `MatmulConstants`, the layout of every product.
struct PrefillKernel: Sendable {
    enum Kind: String, Sendable, CaseIterable {
        /// Float32, 64 tokens × 64 rows a workgroup, 4 × 4 an invocation (16 KiB of shared memory).
        case tiled
        /// NV cooperative matrices: Float16 inputs, Float32 sums, 64 tokens × 128 rows a workgroup.
        case cooperativeMatrix
    }

    let kind: Kind
    let shader: ShaderBinary
    /// Tokens and rows of out per workgroup (TILE_TOKENS, TILE_ROWS in variants.json).
    let tileTokens: Int
    let tileRows: Int
    /// Columns staged per step (TILE_K).
    let tileColumns: Int
    /// Invocations per workgroup (the shader's local size).
    let threads: Int
    /// Bytes of shared memory the shader declares.
    let sharedBytes: Int

    /// Products of at least this many tokens use the tiled kernels; fewer are done by matmul.comp,
    /// which reads W once per 8 tokens and so gains nothing from tiles below that.
    static let minimumTokens = 9

    /// The variant of `kind` for `bits`-bit weights (4 or 8).
    static func variant(_ kind: Kind, bits: Int) -> PrefillKernel {
        let four = bits == 4
        switch kind {
        case .tiled:
            return PrefillKernel(kind: kind, shader: four ? ShaderLibrary.matmulTiledQ4 : ShaderLibrary.matmulTiledQ8,
                                 tileTokens: 64, tileRows: 64, tileColumns: 32, threads: 256, sharedBytes: 4 * 32 * (64 + 64))
        case .cooperativeMatrix:
            // 8 subgroups of 32, each 32 tokens × 32 rows; Float16 tiles with rows padded to 40, and
            // one 16 × 16 Float32 block per subgroup for the results.
            return PrefillKernel(kind: kind, shader: four ? ShaderLibrary.matmulCoopmatQ4 : ShaderLibrary.matmulCoopmatQ8,
                                 tileTokens: 64, tileRows: 128, tileColumns: 32, threads: 256,
                                 sharedBytes: 2 * 40 * (64 + 128) + 4 * 8 * 256)
        }
    }

    /// Whether `device` can run this variant: shared memory and workgroup size for all; for
    /// cooperative matrices also the enabled VK_NV_cooperative_matrix and Float16 features and
    /// 32-invocation subgroups (what the shader is written for).
    func runs(on device: Device) -> Bool {
        let physical = device.physical
        guard sharedBytes <= physical.sharedMemoryBytes, threads <= physical.maxWorkgroupInvocations else { return false }
        if kind == .cooperativeMatrix {
            return device.enabled.cooperativeMatrixNV && device.enabled.float16 && physical.subgroupSize == 32
        }
        return true
    }

    /// The environment variable that picks the prefill kernel by hand, for benchmarks and checks:
    /// `general` (matmul.comp), `tiled` or `cooperativeMatrix`; unset, the best that runs.
    static let environmentVariable = "PHI_GPU_PREFILL"

    /// The kernel for a product of `tokens` tokens of `bits`-bit weights on
    /// `device`, or nil to use matmul.comp: cooperative matrices where the device offers them, else
    /// the Float32 tiles. Throws when `PHI_GPU_PREFILL` names a kernel that does not exist or cannot
    /// run here. Measured on an H100 at Phi-3.5-mini's shapes with 512 tokens: cooperative 17-27
    /// TFLOP/s, Float32 tiles 19-25, matmul.comp 6-7; the cooperative kernel is bound by staging
    /// its tiles, not by its products, which is where more speed is to be had.
    static func choose(tokens: Int, bits: Int, device: Device,
                       environment: [String: String] = ProcessInfo.processInfo.environment) throws -> PrefillKernel? {
        guard tokens >= minimumTokens, bits == 4 || bits == 8 else { return nil }
        if let name = environment[environmentVariable], !name.isEmpty {
            if name == "general" { return nil }
            guard let kind = Kind(rawValue: name) else {
                throw PrefillKernelNotAvailable(setting: "\(environmentVariable)=\(name)", reason:
                    "not a prefill kernel; use one of general, " + Kind.allCases.map(\.rawValue).joined(separator: ", "))
            }
            let chosen = variant(kind, bits: bits)
            guard chosen.runs(on: device) else {
                throw PrefillKernelNotAvailable(setting: "\(environmentVariable)=\(name)", reason:
                    "\(device.physical.name) cannot run it (needs \(chosen.sharedBytes) bytes of shared memory"
                    + (kind == .cooperativeMatrix ? ", VK_NV_cooperative_matrix, Float16 and 32-wide subgroups)" : ")")
                    + "; unset it to choose automatically")
            }
            return chosen
        }
        return [Kind.cooperativeMatrix, .tiled].map { variant($0, bits: bits) }.first { $0.runs(on: device) }
    }
}

/// `PHI_GPU_PREFILL` names a prefill kernel that does not exist or cannot run on this device.
public struct PrefillKernelNotAvailable: Error, CustomStringConvertible {
    public let setting: String
    public let reason: String
    public var description: String { "\(setting): \(reason)" }
}

extension GPUBackend {
    /// Queues a many-token product with the tiled prefill kernels when they apply; returns false
    /// to let the caller use the general kernel.
    func queuePrefillMatmul(_ x: BackendTensor, rows: Range<Int>, weight: GPUMatrix, into out: BackendTensor) throws -> Bool {
        guard let kernel = try PrefillKernel.choose(tokens: rows.count, bits: weight.bits, device: context.device)
        else { return false }
        try queuePrefillMatmul(x, rows: rows, weight: weight, into: out, kernel: kernel)
        return true
    }

    /// Queues out (rows.count, out.columns) = x[rows] (rows.count, columns) · Wᵀ with `kernel`.
    func queuePrefillMatmul(_ x: BackendTensor, rows: Range<Int>, weight: GPUMatrix, into out: BackendTensor,
                            kernel: PrefillKernel) throws {
        let pipeline = try context.pipeline(kernel.shader, bindings: 5, pushConstantSize: MemoryLayout<MatmulConstants>.size,
                                            specialization: [])
        let constants = MatmulConstants(rows: UInt32(weight.rows), columns: UInt32(weight.columns), tokens: UInt32(rows.count),
                                        inputRow: UInt32(rows.lowerBound), groupSize: UInt32(weight.groupSize),
                                        outputStride: UInt32(out.columns))
        try dispatch(pipeline, [BufferBinding(try gpu(x).buffer), BufferBinding(weight.packed), BufferBinding(weight.scales),
                                BufferBinding(weight.biases), BufferBinding(try gpu(out).buffer)],
                     constants,
                     groups: ((weight.rows + kernel.tileRows - 1) / kernel.tileRows,
                              (rows.count + kernel.tileTokens - 1) / kernel.tileTokens, 1))
    }
}
