import Foundation
import PhiCPU
import PhiFormats
@testable import PhiGPU
import PhiModel
import PhiShaders
import TestSupport
import VulkanKit
import XCTest

/// The tiled prefill products (Shaders/matmul_tiled.comp, matmul_coopmat.comp) against
/// `CPUReference.matmul` on seeded random weights and inputs, outputs poisoned with NaN first.
/// Tolerances, relative to the largest output magnitude (at least 1): the Float32 kernels 1e-4
/// (the same products summed in another order); the cooperative-matrix kernel, which rounds x and
/// W to Float16, 1e-2 (it runs only where VK_NV_cooperative_matrix is offered, never on llvmpipe).
final class PrefillMatmulTests: XCTestCase {
    let seed = UInt64(Date().timeIntervalSince1970 * 1000)
    lazy var random = SeededRandom(seed: seed)

    /// A random matrix and its raw arrays (so tests can cut rows out of it).
    struct RandomMatrix {
        var matrix: QuantizedMatrix
        var packed: [UInt32]   // (rows, columns · bits / 32)
        var scales: [Float16]  // (rows, columns / groupSize)
        var biases: [Float16]  // (rows, columns / groupSize)

        init(rows: Int, columns: Int, bits: Int, groupSize: Int, packed: [UInt32], scales: [Float16], biases: [Float16]) {
            (self.packed, self.scales, self.biases) = (packed, scales, biases)
            matrix = QuantizedMatrix(rows: rows, columns: columns, bits: bits, groupSize: groupSize,
                                     packed: TensorStorage(copying: packed), scales: TensorStorage(copying: scales),
                                     biases: TensorStorage(copying: biases))
        }

        /// The matrix of rows `selected` only.
        func rows(_ selected: [Int]) -> QuantizedMatrix {
            let m = matrix
            let words = m.wordsPerRow, groups = m.groupsPerRow
            return RandomMatrix(rows: selected.count, columns: m.columns, bits: m.bits, groupSize: m.groupSize,
                                packed: selected.flatMap { packed[($0 * words)..<(($0 + 1) * words)] },
                                scales: selected.flatMap { scales[($0 * groups)..<(($0 + 1) * groups)] },
                                biases: selected.flatMap { biases[($0 * groups)..<(($0 + 1) * groups)] }).matrix
        }
    }

    func randomMatrix(rows: Int, columns: Int, bits: Int, groupSize: Int) -> RandomMatrix {
        let packed = (0..<(rows * columns * bits / 32)).map { _ in UInt32.random(in: .min ... .max, using: &random) }
        let groups = rows * columns / groupSize
        let scales = (0..<groups).map { _ in Float16(Float.random(in: 0.002...0.02, using: &random)) }
        let biases = (0..<groups).map { _ in Float16(Float.random(in: -0.1...0.1, using: &random)) }
        return RandomMatrix(rows: rows, columns: columns, bits: bits, groupSize: groupSize,
                            packed: packed, scales: scales, biases: biases)
    }

    /// The cooperative product's input, x converted to Float16 (elementwise.comp's
    /// OPERATION_TO_HALF), on every device: rows 2..<7 of x, each value rounded as Swift's
    /// Float16(_:) rounds it (to nearest even; past the largest Float16, to infinity).
    func testPrefillInputsConvertToFloat16() throws {
        let backend = try GPUBackend(context: try TestGPU.context())
        let (rows, columns) = (9, 40)
        let values = (0..<(rows * columns)).map { i in i == 100 ? 1e6 : Float.random(in: -3...3, using: &random) * Float(1 + i % 7) }
        let x = try XCTUnwrap(try backend.makeTensor(rows: rows, columns: columns) as? GPUTensor)
        try x.buffer.upload(values)
        let halves = try backend.queueHalfConversion(x, rows: 2..<7)
        XCTAssertEqual(halves.columns, columns / 2)
        let pairs = try backend.read(halves, rows: 0..<5).map(\.bitPattern)
        let got = pairs.flatMap { [Float(Float16(bitPattern: UInt16($0 & 0xFFFF))), Float(Float16(bitPattern: UInt16($0 >> 16)))] }
        let expected = values[(2 * columns)..<(7 * columns)].map { Float(Float16($0)) }
        XCTAssertEqual(got, Array(expected), "seed \(seed)")
        XCTAssertTrue(got.contains(.infinity), "1e6 is past Float16's range")
        try TestGPU.assertNoValidationErrors()
    }

    /// The variants to test on this device, with their tolerance.
    func variantsToTest(bits: Int, device: Device) -> [(PrefillKernel, Float)] {
        let cooperative = PrefillKernel.cooperativeTiles.compactMap { PrefillKernel.variant(.cooperativeMatrix, bits: bits, tile: $0.name) }
        return ([PrefillKernel.variant(.tiled, bits: bits)].compactMap { $0 } + cooperative)
            .filter { $0.runs(on: device) }
            .map { ($0, $0.kind == .cooperativeMatrix ? 1e-2 : 1e-4) }
    }

    func assertClose(_ got: [Float], _ expected: [Float], relative: Float, _ what: String,
                     file: StaticString = #filePath, line: UInt = #line) {
        TestSupport.assertClose(got, expected, relative: relative, what, note: "random seed \(seed)", file: file, line: line)
    }

    /// Runs `kernel` on rows `tokens` of x (inputRows, columns) into an output of `outputColumns`
    /// columns; returns the output's first `matrix.rows` columns of each token.
    func runKernel(_ kernel: PrefillKernel, backend: GPUBackend, matrix: QuantizedMatrix, x: [Float], inputRows: Int,
                   tokens: Range<Int>, outputColumns: Int) throws -> [Float] {
        let weight = try GPUMatrix(matrix, name: "test weight", context: backend.context) { _ in }
        let input = try XCTUnwrap(try backend.makeTensor(rows: inputRows, columns: matrix.columns) as? GPUTensor)
        try input.buffer.upload(x)
        let out = try XCTUnwrap(try backend.makeTensor(rows: tokens.count, columns: outputColumns) as? GPUTensor)
        try out.buffer.fill(poison)
        try backend.queuePrefillMatmul(input, rows: tokens, weight: weight, into: out, kernel: kernel)
        let all = try backend.read(out, rows: 0..<tokens.count)
        return (0..<tokens.count).flatMap { all[($0 * outputColumns)..<($0 * outputColumns + matrix.rows)] }
    }

    /// Edges in every direction (tokens and rows not multiples of any tile, 96 columns = 3 steps
    /// of 32), every group size, both bit widths, a slice of x, and an output wider than W.
    func testEveryVariantMatchesTheCPUReferenceAtOddShapes() throws {
        let backend = try GPUBackend(context: try TestGPU.context())
        let shapes: [(rows: Int, columns: Int, group: Int, tokens: Int)] = [
            (37, 96, 32, 9), (37, 96, 32, 100), (64, 128, 64, 64), (130, 256, 128, 100), (100, 64, 32, 512),
        ]
        for bits in [4, 8] {
            for (kernel, tolerance) in variantsToTest(bits: bits, device: backend.context.device) {
                for shape in shapes {
                    let weight = randomMatrix(rows: shape.rows, columns: shape.columns, bits: bits, groupSize: shape.group)
                    let x = random.floats(shape.tokens * shape.columns, in: -2...2)
                    let got = try runKernel(kernel, backend: backend, matrix: weight.matrix, x: x, inputRows: shape.tokens,
                                            tokens: 0..<shape.tokens, outputColumns: shape.rows)
                    assertClose(got, CPUReference.matmul(x, weight: weight.matrix), relative: tolerance,
                                "\(kernel.kind) \(bits)-bit \(shape)")
                }
                // Rows 3 ..< 103 of x into an output of 50 columns (40 rows of W): input_row and output_stride.
                let weight = randomMatrix(rows: 40, columns: 64, bits: bits, groupSize: 32)
                let x = random.floats(110 * 64)
                let got = try runKernel(kernel, backend: backend, matrix: weight.matrix, x: x, inputRows: 110,
                                        tokens: 3..<103, outputColumns: 50)
                assertClose(got, CPUReference.matmul(Array(x[(3 * 64)..<(103 * 64)]), weight: weight.matrix),
                            relative: tolerance, "\(kernel.kind) \(bits)-bit, rows 3..<103 of x, output stride 50")
            }
        }
        try TestGPU.assertNoValidationErrors()
    }

    /// Phi-3.5-mini's qkv product (9216 × 3072) for 64 tokens; the reference is computed for every
    /// 97th row and the last (the scalar reference of all rows would take minutes in a debug build).
    func testPhi35QKVShapeFor64Tokens() throws {
        let backend = try GPUBackend(context: try TestGPU.context())
        let (rows, columns, tokens) = (9216, 3072, 64)
        let sampled = Array(stride(from: 0, to: rows, by: 97)) + [rows - 1]
        for bits in [4, 8] {
            let weight = randomMatrix(rows: rows, columns: columns, bits: bits, groupSize: 64)
            let x = random.floats(tokens * columns)
            let expected = CPUReference.matmul(x, weight: weight.rows(sampled))
            for (kernel, tolerance) in variantsToTest(bits: bits, device: backend.context.device) {
                let got = try runKernel(kernel, backend: backend, matrix: weight.matrix, x: x, inputRows: tokens,
                                        tokens: 0..<tokens, outputColumns: rows)
                let gotSampled = (0..<tokens).flatMap { t in sampled.map { got[t * rows + $0] } }
                assertClose(gotSampled, expected, relative: tolerance, "\(kernel.kind) \(bits)-bit 9216x3072, 64 tokens")
            }
        }
        try TestGPU.assertNoValidationErrors()
    }

    /// A backend prepared with the small test model whose layer 0 qkv is `matrix` (96 × 64).
    func backendWithQKV(_ matrix: QuantizedMatrix, bits: Int) throws -> GPUBackend {
        var weights = RandomWeights.make(config: GPUBackendTests.smallConfig, seed: random.next(), bits: bits, groupSize: 16)
        weights.layers[0].qkv = matrix
        let backend = try GPUBackend(context: try TestGPU.context())
        try backend.prepare(weights: weights, contextLength: 16, rotary: RotaryEmbedding(config: weights.config, contextLength: 16))
        return backend
    }

    /// `GPUBackend.matmul` itself: products of more than 8 tokens go to the kernel `choose` picks.
    func testBackendMatmulOfManyTokensMatchesTheCPUReference() throws {
        for (bits, tokens) in [(4, 9), (8, 100)] {
            let weight = randomMatrix(rows: 96, columns: 64, bits: bits, groupSize: 32)
            let backend = try backendWithQKV(weight.matrix, bits: bits)
            let x = random.floats(tokens * 64)
            let input = try XCTUnwrap(try backend.makeTensor(rows: tokens, columns: 64) as? GPUTensor)
            try input.buffer.upload(x)
            let out = try XCTUnwrap(try backend.makeTensor(rows: tokens, columns: 96) as? GPUTensor)
            try out.buffer.fill(poison)
            try backend.matmul(input, rows: 0..<tokens, weight: .qkv(layer: 0), into: out)
            let kernel = try XCTUnwrap(try PrefillKernel.choose(tokens: tokens, bits: bits, columns: 64, device: backend.context.device))
            assertClose(try backend.read(out, rows: 0..<tokens), CPUReference.matmul(x, weight: weight.matrix),
                        relative: kernel.kind == .cooperativeMatrix ? 1e-2 : 1e-4, "backend matmul \(bits)-bit, \(tokens) tokens")
        }
        try TestGPU.assertNoValidationErrors()
    }

    /// A many-token product whose output is then added into the residual is re-queued split over its
    /// columns (2 parts for 64 columns in steps of 32; 4 for 160 columns, 5 steps: shares of 2, 2, 1
    /// and none), the parts added up by the add: both the product and the residual match the CPU,
    /// 4-bit and 8-bit, 4 sums an invocation (addPartsVec4) or, where the output's size is not a
    /// multiple of 4 (98 rows × 99 tokens), one.
    func testProductAddedIntoTheResidualIsSplitOverItsColumns() throws {
        for (bits, columns, parts, rows, tokens) in [(4, 64, 2, 96, 100), (8, 64, 2, 96, 100), (4, 160, 4, 96, 100), (4, 64, 2, 98, 99)] {
            let weight = randomMatrix(rows: rows, columns: columns, bits: bits, groupSize: 32)
            let backend = try backendWithQKV(weight.matrix, bits: bits)
            let kernel = try XCTUnwrap(try PrefillKernel.choose(tokens: tokens, bits: bits, columns: columns, device: backend.context.device))
            XCTAssertEqual(kernel.parts(rows: rows, tokens: tokens, columns: columns, groupSize: 32, multiprocessors: nil, environment: [:]), parts)
            let x = random.floats(tokens * columns)
            let residual = random.floats(tokens * rows)
            let input = try XCTUnwrap(try backend.makeTensor(rows: tokens, columns: columns) as? GPUTensor)
            try input.buffer.upload(x)
            let out = try XCTUnwrap(try backend.makeTensor(rows: tokens, columns: rows) as? GPUTensor)
            try out.buffer.fill(poison)
            let accumulator = try XCTUnwrap(try backend.makeTensor(rows: tokens, columns: rows) as? GPUTensor)
            try accumulator.buffer.upload(residual)
            backend.profiling = true
            try backend.matmul(input, rows: 0..<tokens, weight: .qkv(layer: 0), into: out)
            try backend.add(out, count: tokens, into: accumulator)
            let got = try backend.read(out, rows: 0..<tokens)
            XCTAssertTrue(backend.lastProfile.map(\.name).contains(rows * tokens % 4 == 0 ? "addPartsVec4" : "addParts"), "\(backend.lastProfile.map(\.name))")
            backend.profiling = false
            let product = CPUReference.matmul(x, weight: weight.matrix)
            let tolerance: Float = kernel.kind == .cooperativeMatrix ? 1e-2 : 1e-4
            assertClose(got, product, relative: tolerance, "split product \(bits)-bit, \(columns) columns, \(rows) rows")
            assertClose(try backend.read(accumulator, rows: 0..<tokens), zip(residual, product).map { $0 + $1 }, relative: tolerance,
                        "residual plus split product \(bits)-bit, \(columns) columns")
        }
        try TestGPU.assertNoValidationErrors()
    }

    /// Products with few tiles are split into more parts; a part is a whole number of steps (the
    /// last parts may get fewer), and PHI_GPU_PREFILL_SPLIT sets the number by hand.
    func testSplitPartsFollowTheTilesAndTheColumns() {
        XCTAssertEqual(PrefillKernel.parts(tiles: 192, columns: 8192, step: 64, environment: [:]), 4)
        XCTAssertEqual(PrefillKernel.parts(tiles: 576, columns: 3072, step: 64, environment: [:]), 2)
        XCTAssertEqual(PrefillKernel.parts(tiles: 1024, columns: 3072, step: 64, environment: [:]), 1)
        XCTAssertEqual(PrefillKernel.parts(tiles: 48, columns: 192, step: 64, environment: [:]), 3, "3 steps: at most 3 parts")
        XCTAssertEqual(PrefillKernel.parts(tiles: 48, columns: 200, step: 64, environment: [:]), 1, "not whole steps")
        XCTAssertEqual(PrefillKernel.parts(tiles: 48, columns: 256, step: 64, environment: [:]), 4)
        XCTAssertEqual(PrefillKernel.parts(tiles: 192, columns: 8192, step: 64, environment: [PrefillKernel.splitVariable: "1"]), 1)
        XCTAssertEqual(PrefillKernel.parts(tiles: 1024, columns: 8192, step: 64, environment: [PrefillKernel.splitVariable: "3"]), 3)
        XCTAssertEqual(PrefillKernel.parts(tiles: 1024, columns: 8192, step: 64, environment: [PrefillKernel.splitVariable: "9"]), 1, "not 1 to 8")
    }

    /// Stream-K takes the large tile's products whose tiles are more than the multiprocessors and
    /// not a whole number of waves, and no others (its kernel runs only with NV cooperative
    /// matrices: on the GPU, checked against the CPU with `phi-gpu score`).
    func testStreamKWhereTheLastWaveIsPartial() throws {
        let large = try XCTUnwrap(PrefillKernel.variant(.cooperativeMatrix, bits: 4, tile: PrefillKernel.largeTile))
        let small = try XCTUnwrap(PrefillKernel.variant(.cooperativeMatrix, bits: 4, tile: PrefillKernel.defaultTile))
        let gateUp = large.streamK(rows: 16_384, tokens: 512, multiprocessors: 132, environment: [:])
        XCTAssertEqual(gateUp?.workgroups, 132, "gate·up: 228 tiles in 1.7 waves")
        XCTAssertEqual(gateUp?.shader.name, "matmulCoopmatQ4_256x144StreamK")
        XCTAssertEqual(large.streamK(rows: 16_384, tokens: 488, multiprocessors: 132, environment: [:])?.workgroups, 132)
        XCTAssertNil(large.streamK(rows: 9216, tokens: 512, multiprocessors: 132, environment: [:]), "qkv: 128 tiles, one wave")
        XCTAssertNil(large.streamK(rows: 9216, tokens: 512, multiprocessors: 64, environment: [:]), "qkv on 64: two whole waves")
        XCTAssertNil(large.streamK(rows: 16_384, tokens: 512, multiprocessors: nil, environment: [:]), "no multiprocessor count")
        XCTAssertNil(large.streamK(rows: 16_384, tokens: 512, multiprocessors: 132, environment: [PrefillKernel.streamKVariable: "0"]))
        // Added into the residual: o and down at 2,048 tokens (176 tiles), not at 512 (44: split over the columns instead).
        XCTAssertEqual(large.streamKAdd(rows: 3072, tokens: 2048, columns: 8192, multiprocessors: 132, environment: [:])?.workgroups, 132)
        XCTAssertEqual(large.streamKAdd(rows: 3072, tokens: 2048, columns: 8192, multiprocessors: 132, environment: [:])?.shader.name,
                       "matmulCoopmatQ4_256x144StreamKAdd")
        XCTAssertNil(large.streamKAdd(rows: 3072, tokens: 512, columns: 3072, multiprocessors: 132, environment: [:]))
        XCTAssertNil(large.streamKAdd(rows: 3072, tokens: 2048, columns: 8192, multiprocessors: 132, environment: ["PHI_GPU_STREAM_K_ADD": "0"]))
        XCTAssertNil(small.streamK(rows: 16_384, tokens: 512, multiprocessors: 132, environment: [:]), "only the large tile")
    }

    /// The plan on an H200's 132 multiprocessors at Phi-3.5-mini's shapes: the large tile where its
    /// waves fill (qkv: 128 tiles at 512 tokens; gate·up), the default where its own fewer, smaller
    /// waves cost less (short prompts), and products added into the residual split so that their
    /// large tiles make whole waves (o and down: 44 tiles in 3 parts).
    func testPlanWeighsTheTilesWaves() {
        func plan(_ rows: Int, _ tokens: Int, _ columns: Int, splittable: Bool = false) -> String {
            let chosen = PrefillKernel.plan(rows: rows, tokens: tokens, columns: columns, step: 64, splittable: splittable,
                                            multiprocessors: 132)
            return "\(chosen.tile) \(chosen.parts)"
        }
        XCTAssertEqual(plan(9216, 512, 3072), "_256x144 1", "qkv: one wave of 128 tiles")
        XCTAssertEqual(plan(9216, 1024, 3072), "_256x144 1")
        XCTAssertEqual(plan(16_384, 512, 3072), "_256x144 1", "gate·up")
        XCTAssertEqual(plan(9216, 100, 3072), "_128x64 1", "100 tokens: most of a large tile would be padding")
        XCTAssertEqual(plan(3072, 512, 3072, splittable: true), "_256x144 3", "o")
        XCTAssertEqual(plan(3072, 512, 8192, splittable: true), "_256x144 3", "down")
        XCTAssertEqual(plan(3072, 512, 3072), "_128x64 1", "not splittable: 44 large tiles would leave a third of the device idle")
        XCTAssertEqual(PrefillKernel.plan(rows: 9216, tokens: 512, columns: 3072, step: 64, splittable: false, multiprocessors: 0).tile,
                       PrefillKernel.defaultTile, "no multiprocessors: nothing to weigh")
        let large = PrefillKernel.variant(.cooperativeMatrix, bits: 4, tile: PrefillKernel.largeTile)
        XCTAssertEqual(large?.parts(rows: 3072, tokens: 512, columns: 8192, groupSize: 64, multiprocessors: 132, environment: [:]), 3,
                       "the kernel splits as the plan did")
        XCTAssertEqual(large?.parts(rows: 3072, tokens: 512, columns: 8192, groupSize: 64, multiprocessors: 132,
                                    environment: [PrefillKernel.splitVariable: "2"]), 2)
        XCTAssertEqual(large?.parts(rows: 3072, tokens: 512, columns: 8192, groupSize: 64, multiprocessors: nil, environment: [:]), 4,
                       "no multiprocessor count: by the number of tiles (44)")
    }

    /// The choice: by the device's features, never its name; PHI_GPU_PREFILL overrides it, and a
    /// kernel that is unknown or cannot run is a clear error.
    func testKernelChoiceFollowsTheDeviceFeaturesAndTheOverride() throws {
        let device = try TestGPU.context().device
        let none: [String: String] = [:]
        XCTAssertNil(try PrefillKernel.choose(tokens: 8, bits: 4, columns: 64, device: device, environment: none),
                     "8 tokens or fewer stay with matmul.comp")
        let chosen = try XCTUnwrap(try PrefillKernel.choose(tokens: 512, bits: 4, columns: 64, device: device, environment: none))
        let cooperative = device.enabled.cooperativeMatrixNV && device.enabled.float16 && device.physical.subgroupSize == 32
        XCTAssertEqual(chosen.kind == .cooperativeMatrix, cooperative, "cooperative matrices exactly where the device offers them")
        XCTAssertEqual(chosen.shader.name, cooperative ? "matmulCoopmatQ4_128x64" : "matmulTiledQ4", "128 tokens × 64 rows")
        let wide = try XCTUnwrap(try PrefillKernel.choose(tokens: 512, bits: 4, columns: 3072, rows: 16_384, device: device, environment: none))
        let planned = device.physical.multiprocessors.map {
            PrefillKernel.plan(rows: 16_384, tokens: 512, columns: 3072, step: 64, splittable: false, multiprocessors: $0).tile }
        XCTAssertEqual(wide.shader.name, cooperative && planned != nil ? "matmulCoopmatQ4" + (planned ?? "") : chosen.shader.name,
                       "the planned tile only on cooperative devices that report their multiprocessors")
        let shorter = try XCTUnwrap(try PrefillKernel.choose(tokens: 9, bits: 4, columns: 64, device: device, environment: none))
        XCTAssertEqual(shorter.shader.name, chosen.shader.name, "the same tile for short prompts")
        if cooperative {
            let forcedTile = try PrefillKernel.choose(tokens: 512, bits: 4, columns: 64, device: device,
                                                      environment: [PrefillKernel.tileVariable: "64x128"])
            XCTAssertEqual(forcedTile?.shader.name, "matmulCoopmatQ4", "64x128 names the unnamed variant")
        }
        let eightBit = try XCTUnwrap(try PrefillKernel.choose(tokens: 512, bits: 8, columns: 64, device: device, environment: none))
        XCTAssertEqual(eightBit.shader.name, cooperative ? "matmulCoopmatQ8_128x64" : "matmulTiledQ8", "8-bit weights take the same tile")
        if cooperative {
            let narrow = try PrefillKernel.choose(tokens: 512, bits: 8, columns: 64, device: device,
                                                  environment: [PrefillKernel.tileVariable: "64x64"])
            XCTAssertEqual(narrow?.shader.name, "matmulCoopmatQ8_128x64", "a tile 8-bit weights lack falls back to the default")
        }
        XCTAssertNil(try PrefillKernel.choose(tokens: 512, bits: 8, columns: 64, device: device,
                                              environment: [PrefillKernel.environmentVariable: "general"]))
        let forced = try PrefillKernel.choose(tokens: 512, bits: 8, columns: 64, device: device,
                                              environment: [PrefillKernel.environmentVariable: "tiled"])
        XCTAssertEqual(forced?.shader.name, "matmulTiledQ8")
        XCTAssertThrowsError(try PrefillKernel.choose(tokens: 512, bits: 4, columns: 64, device: device,
                                                      environment: [PrefillKernel.environmentVariable: "fastest"])) { error in
            XCTAssertTrue("\(error)".contains("PHI_GPU_PREFILL=fastest") && "\(error)".contains("cooperativeMatrix"), "\(error)")
        }
        XCTAssertThrowsError(try PrefillKernel.choose(tokens: 512, bits: 4, columns: 64, device: device,
                                                      environment: [PrefillKernel.tileVariable: "65x65"])) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("PHI_GPU_PREFILL_TILE=65x65") && text.contains("64x128, 64x64, 128x128, 128x64") && !text.contains("_64"), text)
        }
        if !cooperative {
            XCTAssertThrowsError(try PrefillKernel.choose(tokens: 512, bits: 4, columns: 64, device: device,
                                                          environment: [PrefillKernel.environmentVariable: "cooperativeMatrix"])) { error in
                XCTAssertTrue("\(error)".contains("VK_NV_cooperative_matrix"), "\(error)")
            }
        }
    }

    /// The Swift table of variants agrees with Shaders/variants.json (tile defines) and with the
    /// SPIR-V (workgroup size), so the dispatch grid covers exactly what the shaders compute.
    func testVariantTableMatchesVariantsJSONAndTheSPIRV() throws {
        let list = try VariantsJSON.load()
        for bits in [4, 8] {
            let cooperative = PrefillKernel.cooperativeTiles.compactMap { PrefillKernel.variant(.cooperativeMatrix, bits: bits, tile: $0.name) }
            XCTAssertFalse(cooperative.isEmpty, "a \(bits)-bit cooperative-matrix variant")
            for kernel in [PrefillKernel.variant(.tiled, bits: bits)].compactMap({ $0 }) + cooperative {
                let defines = try XCTUnwrap(list.defines(of: kernel.shader.name), kernel.shader.name)
                XCTAssertEqual(defines["BITS"], "\(bits)", kernel.shader.name)
                XCTAssertEqual(defines["TILE_TOKENS"], "\(kernel.tileTokens)", kernel.shader.name)
                XCTAssertEqual(defines["TILE_ROWS"], "\(kernel.tileRows)", kernel.shader.name)
                XCTAssertEqual(defines["TILE_K"], "\(kernel.tileColumns)", kernel.shader.name)
                XCTAssertEqual(localSize(kernel.shader.words), kernel.threads, "workgroup size of \(kernel.shader.name)")
            }
        }
        // Every compiled cooperative-matrix variant has its row in the table; a stream-K one (with
        // the residual add: "Add") has the defines of the tile it is the stream-K form of.
        for variant in list.variants where variant.name.hasPrefix("matmulCoopmat") {
            let bits = Int(variant.defines?["BITS"] ?? "") ?? 0
            var tile = String(variant.name.dropFirst("matmulCoopmatQ\(bits)".count))
            if variant.defines?["STREAM_K"] != nil {
                let suffix = variant.defines?["ACCUMULATE"] != nil ? "StreamKAdd" : "StreamK"
                XCTAssertTrue(tile.hasSuffix(suffix), variant.name)
                tile = String(tile.dropLast(suffix.count))
                var plain = variant.defines ?? [:]
                plain["STREAM_K"] = nil
                plain["ACCUMULATE"] = nil
                XCTAssertEqual(list.defines(of: "matmulCoopmatQ\(bits)\(tile)"), plain, variant.name)
            }
            XCTAssertNotNil(PrefillKernel.variant(.cooperativeMatrix, bits: bits, tile: tile), variant.name)
        }
    }

    /// The x of `OpExecutionMode %main LocalSize x y z` in a SPIR-V module.
    func localSize(_ words: [UInt32]) -> Int? {
        var index = 5
        while index < words.count {
            let count = Int(words[index] >> 16), opcode = words[index] & 0xffff
            guard count > 0 else { return nil }
            if opcode == 16 && count >= 6 && words[index + 2] == 17 { return Int(words[index + 3]) }
            index += count
        }
        return nil
    }
}
