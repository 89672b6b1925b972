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
        /// NV cooperative matrices: Float16 inputs, Float32 sums, a tile of `cooperativeTiles` a
        /// workgroup (`defaultTile`, 128 tokens × 64 rows, or `largeTile` where `plan` estimates
        /// it faster, unless `PHI_GPU_PREFILL_TILE` names another).
        case cooperativeMatrix
    }

    let kind: Kind
    let shader: ShaderBinary
    /// The cooperative tile's name in `cooperativeTiles`; nil for the Float32 tiles.
    let tile: String?
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

    /// The cooperative-matrix tiles compiled (`matmulCoopmatQ<bits><name>` in variants.json):
    /// tokens × rows of out per workgroup, columns per step, and each subgroup's tokens × rows.
    struct CooperativeTile: Sendable {
        let name: String
        let tokens: Int, rows: Int, columns: Int, warpTokens: Int, warpRows: Int
        var threads: Int { 32 * (tokens / warpTokens) * (rows / warpRows) }
        /// Workgroups of a product of `rows` rows of W and `tokens` tokens.
        func count(rows: Int, tokens: Int) -> Int {
            PrefillKernel.workgroups(rows: rows, tokens: tokens, tileRows: self.rows, tileTokens: self.tokens)
        }
        /// Shared memory: the Float16 tiles of x and W (rows padded by 8 values) and a 16 × 16
        /// Float32 block per subgroup for the edges.
        var sharedBytes: Int { 2 * (columns + 8) * (tokens + rows) + 4 * 256 * threads / 32 }
    }

    /// Measured at Phi-3.5-mini's shapes, 512 tokens (µs for qkv, o, gate·up, down). H100:
    /// 64 × 128 405, 152, 599, 424; 64 × 64 400, 147, 768, 397; 128 × 128 in 4 subgroups 453,
    /// 185, 533, 550; 128 × 128 in 8 subgroups, 64 columns a step, and 256 × 128 were slower.
    /// H200: 64 × 128 412, 154, 604, 434; 128 × 64 428, 141, 564, 385 (pp512 8,430-8,476 against
    /// 7,906-7,923); slower there: 64 × 128 in 4 subgroups, 64 × 256, 64 columns a step (both
    /// tiles), 128 × 64 in 4 subgroups, 256 × 64 (BENCHMARKS.md, sixth session). With x in Float16
    /// (eighth session, H200): 128 × 64 295, 123, 456, 318; 64 × 128 347, 141, 529, 395; 64 × 64
    /// 345, 126, 609, 340; 128 × 128 393, 167, 470, 453. 256 × 128 in 16 subgroups of 64 × 32
    /// (eleventh session, H200): 382, 199, 408, 522. 256 × 144 in 12 subgroups of 64 × 48 (twelfth
    /// session, H200): 194, —, 374, —; see `largeTile`.
    static let cooperativeTiles: [CooperativeTile] = [
        CooperativeTile(name: "", tokens: 64, rows: 128, columns: 32, warpTokens: 32, warpRows: 32),
        CooperativeTile(name: "_64x64", tokens: 64, rows: 64, columns: 32, warpTokens: 32, warpRows: 32),
        CooperativeTile(name: "_128x128", tokens: 128, rows: 128, columns: 32, warpTokens: 64, warpRows: 64),
        CooperativeTile(name: "_128x64", tokens: 128, rows: 64, columns: 32, warpTokens: 32, warpRows: 32),
        CooperativeTile(name: "_256x144", tokens: 256, rows: 144, columns: 32, warpTokens: 64, warpRows: 48),
    ]

    /// The variant of `kind` for `bits`-bit weights (4 or 8); for cooperative matrices the tile
    /// named `tile` (nil when no such variant was compiled for `bits`).
    static func variant(_ kind: Kind, bits: Int, tile: String = "") -> PrefillKernel? {
        let four = bits == 4
        switch kind {
        case .tiled:
            return PrefillKernel(kind: kind, shader: four ? ShaderLibrary.matmulTiledQ4 : ShaderLibrary.matmulTiledQ8, tile: nil,
                                 tileTokens: 64, tileRows: 64, tileColumns: 32, threads: 256, sharedBytes: 4 * 32 * (64 + 64))
        case .cooperativeMatrix:
            guard let shape = cooperativeTiles.first(where: { $0.name == tile }),
                  let shader = ShaderLibrary.named("matmulCoopmatQ\(bits)\(tile)") else { return nil }
            return PrefillKernel(kind: kind, shader: shader, tile: tile, tileTokens: shape.tokens, tileRows: shape.rows,
                                 tileColumns: shape.columns, threads: shape.threads, sharedBytes: shape.sharedBytes)
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

    /// Workgroups of a product of `rows` rows of W and `tokens` tokens.
    func tiles(rows: Int, tokens: Int) -> Int {
        Self.workgroups(rows: rows, tokens: tokens, tileRows: tileRows, tileTokens: tileTokens)
    }

    /// The stream-K form of this kernel and its workgroup count, for an unsplit product of `rows`
    /// rows and `tokens` tokens on `multiprocessors`: where the large tile's last wave would leave
    /// multiprocessors idle (more tiles than multiprocessors, not a whole number of waves), one
    /// workgroup per multiprocessor takes the tiles of the whole waves one at a time and an equal
    /// share of the last wave's steps (of all the tiles' where there is only one whole wave)
    /// instead (matmul_coopmat.comp with STREAM_K). Nil elsewhere, or with `PHI_GPU_STREAM_K=0`.
    /// On an H200 gate·up at 512 tokens (228 tiles) went from 376 to 357 µs, at 1,024 from 737 to
    /// 649, the LM head at 512 from 735 to 642; pp512 +1.2-1.7%, pp1024 +0.7% against sharing out
    /// all tiles (BENCHMARKS.md, thirteenth and fourteenth sessions). `plan` still weighs the
    /// tiles by whole waves.
    func streamK(rows: Int, tokens: Int, multiprocessors: Int?,
                 environment: [String: String] = Self.processEnvironment) -> (shader: ShaderBinary, workgroups: Int)? {
        guard environment[Self.streamKVariable] != "0", let multiprocessors, multiprocessors > 0, let tile, tile == Self.largeTile,
              let shader = ShaderLibrary.named(shader.name + "StreamK") else { return nil }
        let tiles = self.tiles(rows: rows, tokens: tokens)
        guard tiles > multiprocessors, tiles % multiprocessors != 0 else { return nil }
        return (shader, multiprocessors)
    }

    /// The stream-K form that also adds into the residual (STREAM_K with ACCUMULATE) and its
    /// workgroup count, for a product of `rows` rows, `tokens` tokens and `columns` columns added into
    /// the residual on `multiprocessors`, instead of splitting it over its columns and adding the
    /// parts in another dispatch: where the tiles are more than one wave and not a whole number of
    /// waves. On an H200 pp2048 went from 16,260 to 16,823 (o and down: 176 tiles); with fewer
    /// tiles than multiprocessors (o and down at 512 tokens, 44 tiles) it lost 0.6-0.9% to the split
    /// (BENCHMARKS.md, fourteenth session). Nil elsewhere, or with `PHI_GPU_STREAM_K=0` or
    /// `PHI_GPU_STREAM_K_ADD=0`.
    func streamKAdd(rows: Int, tokens: Int, columns: Int, multiprocessors: Int?,
                    environment: [String: String] = Self.processEnvironment) -> (shader: ShaderBinary, workgroups: Int)? {
        guard environment[Self.streamKVariable] != "0", environment["PHI_GPU_STREAM_K_ADD"] != "0", let multiprocessors,
              multiprocessors > 0, let tile, tile == Self.largeTile,
              let shader = ShaderLibrary.named(shader.name + "StreamKAdd") else { return nil }
        let tiles = self.tiles(rows: rows, tokens: tokens)
        guard tiles > multiprocessors, tiles % multiprocessors != 0, columns >= tileColumns else { return nil }
        return (shader, multiprocessors)
    }

    /// The environment variable that turns stream-K off (`0`), or has it share out every tile's
    /// steps (`all`) or only those of the last partial wave (`partial`) rather than choose by the
    /// number of waves, for measurements.
    static let streamKVariable = "PHI_GPU_STREAM_K"

    /// STREAM_MODE of matmul_coopmat.comp: 0 (share out only the last partial wave's tiles where
    /// the tiles make two whole waves or more, else all), 1 (`all`) or 2 (`partial`).
    static let streamMode: UInt32 = switch processEnvironment[streamKVariable] {
    case "all": 1
    case "partial": 2
    default: 0
    }

    /// Tiles of `tileRows` × `tileTokens` covering `rows` × `tokens`.
    static func workgroups(rows: Int, tokens: Int, tileRows: Int, tileTokens: Int) -> Int {
        ((rows + tileRows - 1) / tileRows) * ((tokens + tileTokens - 1) / tileTokens)
    }

    /// Parts a product added into the residual is split into over its `columns` (each part a whole
    /// number of `step` columns, the tile's step or the group size, whichever is larger; the last
    /// parts may get fewer), where the device does not say how many multiprocessors it has: 4 for
    /// at most 384 tiles, 2 for at most 768, else 1. `PHI_GPU_PREFILL_SPLIT` (1 to 8) sets it by hand.
    static func parts(tiles: Int, columns: Int, step: Int, environment: [String: String] = processEnvironment) -> Int {
        let parts = forcedParts(environment) ?? (tiles <= 384 ? 4 : tiles <= 768 ? 2 : 1)
        return columns % step == 0 ? max(1, min(parts, columns / step)) : 1
    }

    /// The parts a product added into the residual is split into in this kernel's tiles:
    /// `PHI_GPU_PREFILL_SPLIT`, else `bestParts` where the device says how many multiprocessors it
    /// has and the tile is one `plan` weighs, else `parts(tiles:columns:step:)`.
    func parts(rows: Int, tokens: Int, columns: Int, groupSize: Int, multiprocessors: Int?,
               environment: [String: String] = Self.processEnvironment) -> Int {
        let step = max(tileColumns, groupSize)
        if Self.forcedParts(environment) == nil, let multiprocessors, let cost = Self.tileCosts.first(where: { $0.name == tile }) {
            return Self.bestParts(cost, rows: rows, tokens: tokens, columns: columns, step: step, splittable: true,
                                  multiprocessors: multiprocessors).parts
        }
        return Self.parts(tiles: tiles(rows: rows, tokens: tokens), columns: columns, step: step, environment: environment)
    }

    /// `PHI_GPU_PREFILL_SPLIT`, when it names 1 to 8 parts.
    static func forcedParts(_ environment: [String: String]) -> Int? {
        environment[splitVariable].flatMap(Int.init).flatMap { (1...8).contains($0) ? $0 : nil }
    }

    /// The environment variable that sets how many parts `parts` splits products into.
    static let splitVariable = "PHI_GPU_PREFILL_SPLIT"

    /// The environment variable that picks the prefill kernel by hand, for benchmarks and checks:
    /// `general` (matmul.comp), `tiled` or `cooperativeMatrix`; unset, the best that runs.
    static let environmentVariable = "PHI_GPU_PREFILL"

    /// The kernel for a product of `tokens` tokens of `bits`-bit weights on
    /// `device`, or nil to use matmul.comp: cooperative matrices where the device offers them, else
    /// the Float32 tiles. Throws when `PHI_GPU_PREFILL` names a kernel that does not exist or cannot
    /// run here, or `PHI_GPU_PREFILL_TILE` a tile that does not exist (8-bit weights, which have
    /// only 128 × 64 and 64 × 128, take the default for other tiles when the variable is not
    /// forcing cooperativeMatrix). Measured on an H100 at Phi-3.5-mini's shapes with 512 tokens
    /// (x in Float32 then): cooperative 61-86 TFLOP/s (after unrolling its loops: 23-29 without),
    /// Float32 tiles 19-25, matmul.comp 6-7.
    /// With `rows`, on a device that says how many multiprocessors it has, the tile is `plan`'s
    /// (`splittable`: the product may be split over its columns) instead of the default.
    static func choose(tokens: Int, bits: Int, columns: Int, rows: Int? = nil, splittable: Bool = false, groupSize: Int = 64,
                       device: Device, environment: [String: String] = processEnvironment) throws -> PrefillKernel? {
        guard tokens >= minimumTokens, bits == 4 || bits == 8 else { return nil }
        let tileSetting = environment[tileVariable] ?? ""
        let requested = tileSetting.hasPrefix("_") ? String(tileSetting.dropFirst()) : tileSetting
        // The unnamed variant is 64 × 128.
        var tile = tileSetting.isEmpty ? defaultTile : requested == "64x128" ? "" : "_" + requested
        if tileSetting.isEmpty, let rows, let multiprocessors = device.physical.multiprocessors,
           let large = variant(.cooperativeMatrix, bits: bits, tile: largeTile), large.runs(on: device) {
            tile = plan(rows: rows, tokens: tokens, columns: columns, step: max(large.tileColumns, groupSize),
                        splittable: splittable, multiprocessors: multiprocessors).tile
        }
        let tileNames = cooperativeTiles.map { $0.name.isEmpty ? "64x128" : String($0.name.dropFirst()) }.joined(separator: ", ")
        guard cooperativeTiles.contains(where: { $0.name == tile }) else {
            throw PrefillKernelNotAvailable(setting: "\(tileVariable)=\(tileSetting)", reason:
                "not a cooperative-matrix tile; use one of \(tileNames), or unset it to choose by the number of tokens")
        }
        if let name = environment[environmentVariable], !name.isEmpty {
            if name == "general" { return nil }
            guard let kind = Kind(rawValue: name) else {
                throw PrefillKernelNotAvailable(setting: "\(environmentVariable)=\(name)", reason:
                    "not a prefill kernel; use one of general, " + Kind.allCases.map(\.rawValue).joined(separator: ", "))
            }
            guard let chosen = variant(kind, bits: bits, tile: kind == .cooperativeMatrix ? tile : "") else {
                throw PrefillKernelNotAvailable(setting: "\(tileVariable)=\(tileSetting)", reason:
                    "\(bits)-bit weights have only the 128x64 and 64x128 tiles; unset it")
            }
            guard chosen.runs(on: device), kind != .cooperativeMatrix || columns % 8 == 0 else {
                throw PrefillKernelNotAvailable(setting: "\(environmentVariable)=\(name)", reason:
                    "\(device.physical.name) cannot run it (needs \(chosen.sharedBytes) bytes of shared memory"
                    + (kind == .cooperativeMatrix ? ", VK_NV_cooperative_matrix, Float16, 32-wide subgroups and columns a multiple of 8)" : ")")
                    + "; unset it to choose automatically")
            }
            return chosen
        }
        if columns % 8 == 0,
           let cooperative = variant(.cooperativeMatrix, bits: bits, tile: tile) ?? variant(.cooperativeMatrix, bits: bits, tile: defaultTile),
           cooperative.runs(on: device) {
            return cooperative
        }
        return variant(.tiled, bits: bits).flatMap { $0.runs(on: device) ? $0 : nil }
    }

    /// The process's environment, read once: building it costs tens of µs, once per product
    /// measured 16.7 ms of host time in a 512-token pass on the H100's host.
    static let processEnvironment = ProcessInfo.processInfo.environment

    /// Picks the cooperative-matrix tile by its shape (`64x128`, `64x64`, `128x128`, `128x64`, `256x144`; see
    /// `cooperativeTiles`), for measurements; unset, `defaultTile`.
    static let tileVariable = "PHI_GPU_PREFILL_TILE"

    /// The cooperative-matrix tile: 128 tokens × 64 rows, at every prompt length. With x in Float16
    /// it beat 64 × 128 (the choice below 128 tokens before) on an H200 at 32, 64, 100 and 200 tokens:
    /// pp32 1,852 against 1,707 t/s, pp64 3,589 against 3,246, pp100 5,354 against 4,635; at 8 bits
    /// pp100 5,040 against 4,099 and pp512 11,040 against 9,360.
    static let defaultTile = "_128x64"

    /// The large cooperative tile: 256 tokens × 144 rows in 12 subgroups of 64 × 48 (4-bit weights).
    /// A multiprocessor holds one (168 registers × 384 invocations on an H200), which multiplies
    /// about a fifth faster than two of 128 × 64, but wastes more in a wave it does not fill. On an
    /// H200 at 512 tokens qkv (128 tiles on 132 multiprocessors) took 194 µs against 295, gate·up
    /// 374 against 404 for 256 × 128 (BENCHMARKS.md, twelfth session). `plan` weighs the two.
    static let largeTile = "_256x144"

    /// What the automatic choice knows of a tile: how many workgroups a multiprocessor runs at once,
    /// and how long one wave of them took at 3,072 columns on an H200 (qkv at 512 tokens: 576 tiles
    /// of 128 × 64 in 3 waves of 264 took 295 µs, 128 tiles of 256 × 144 in one wave 194).
    struct TileCost: Sendable {
        let name: String
        let perMultiprocessor: Int
        let waveMicroseconds: Double
    }

    /// The tiles `plan` weighs.
    static let tileCosts = [
        TileCost(name: defaultTile, perMultiprocessor: 2, waveMicroseconds: 98.5),
        TileCost(name: largeTile, perMultiprocessor: 1, waveMicroseconds: 194),
    ]

    /// The estimated µs of a product of `rows` rows, `tokens` tokens and `columns` columns in
    /// tiles of `cost` split into `parts` over its columns, on `multiprocessors`: whole waves, each
    /// part doing its share of the columns, plus reading every part's partial sums again to add
    /// them up (at about 3 TB/s).
    static func estimatedMicroseconds(_ cost: TileCost, rows: Int, tokens: Int, columns: Int, parts: Int,
                                      multiprocessors: Int) -> Double {
        guard let shape = cooperativeTiles.first(where: { $0.name == cost.name }), multiprocessors > 0 else { return .infinity }
        let tiles = shape.count(rows: rows, tokens: tokens) * parts
        let slots = cost.perMultiprocessor * multiprocessors
        let waves = Double((tiles + slots - 1) / slots)
        let partSums = parts > 1 ? Double(parts * tokens * rows * 4) / 3e6 : 0
        return waves * cost.waveMicroseconds * Double(columns) / Double(3072 * parts) + partSums
    }

    /// The tile of `tileCosts` and the number of parts (1 unless `splittable`; each a whole number
    /// of `step` columns) with the least estimated time for a product on `multiprocessors`.
    static func plan(rows: Int, tokens: Int, columns: Int, step: Int, splittable: Bool,
                     multiprocessors: Int) -> (tile: String, parts: Int) {
        var best = (tile: defaultTile, parts: 1, microseconds: Double.infinity)
        for cost in tileCosts {
            let (tile, parts, microseconds) = bestParts(cost, rows: rows, tokens: tokens, columns: columns, step: step,
                                                        splittable: splittable, multiprocessors: multiprocessors)
            if microseconds < best.microseconds { best = (tile, parts, microseconds) }
        }
        return (best.tile, best.parts)
    }

    /// The number of parts with the least estimated time in tiles of `cost` (fewer parts on a tie).
    static func bestParts(_ cost: TileCost, rows: Int, tokens: Int, columns: Int, step: Int, splittable: Bool,
                          multiprocessors: Int) -> (tile: String, parts: Int, microseconds: Double) {
        let most = splittable && step > 0 && columns % step == 0 ? min(8, columns / step) : 1
        var best = (tile: cost.name, parts: 1, microseconds: Double.infinity)
        for parts in 1...max(1, most) {
            let microseconds = estimatedMicroseconds(cost, rows: rows, tokens: tokens, columns: columns, parts: parts,
                                                     multiprocessors: multiprocessors)
            if microseconds < best.microseconds { best = (cost.name, parts, microseconds) }
        }
        return best
    }
}

/// `PHI_GPU_PREFILL` or `PHI_GPU_PREFILL_TILE` names a prefill kernel or tile that does not exist
/// or cannot run on this device.
public struct PrefillKernelNotAvailable: Error, CustomStringConvertible {
    public let setting: String
    public let reason: String
    public var description: String { "\(setting): \(reason)" }
}
