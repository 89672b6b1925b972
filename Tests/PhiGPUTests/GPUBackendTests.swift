import Foundation
import PhiCPU
import PhiFormats
@testable import PhiGPU
import PhiModel
import PhiShaders
import TestSupport
import VulkanKit
import XCTest

/// Every GPU operation against the CPU reference (`CPUReference`) on fresh random inputs (seeded from
/// the clock; the seed is printed on failure), output buffers poisoned with NaN first.
/// Tolerances: elementwise operations 1e-5 (relative to the largest output, at least 1);
/// products 2e-4 relative (float32 sums in a different order), except 4-bit one-token products
/// (`decodeProductTolerance`: 1e-3, multiplied in Float16); attention 3e-3 relative (the GPU's KV
/// cache holds Float16).
final class GPUBackendTests: XCTestCase {
    let seed = UInt64(Date().timeIntervalSince1970 * 1000)
    lazy var random = SeededRandom(seed: seed)
    var seedNote: String { "random seed \(seed)" }

    /// A small model: GQA (4 heads on 2 kv heads), partial rotary (12 of 16 dims), LongRoPE factors.
    static let smallConfig: ModelConfig = {
        let shortFactor: [Float] = [1, 1.1, 1.2, 1.3, 1.4, 1.5]
        let longFactor: [Float] = [2, 3, 4, 5, 6, 7]
        let longRoPE = ModelConfig.LongRoPE(shortFactor: shortFactor, longFactor: longFactor, originalContext: 256)
        return ModelConfig(
            architecture: .phi3, hiddenSize: 64, intermediateSize: 96, layerCount: 1, headCount: 4, kvHeadCount: 2,
            headDimension: 16, vocabularySize: 300, rmsNormEpsilon: 1e-5, ropeTheta: 10000, rotaryDimensions: 12,
            maxContext: 16384, longRoPE: longRoPE, tiedEmbeddings: true)
    }()

    func randomMatrix(rows: Int, columns: Int, bits: Int, groupSize: Int) -> QuantizedMatrix {
        let packed = (0..<(rows * columns * bits / 32)).map { _ in UInt32.random(in: .min ... .max, using: &random) }
        let groups = rows * columns / groupSize
        let scales = (0..<groups).map { _ in Float16(Float.random(in: 0.002...0.02, using: &random)) }
        let biases = (0..<groups).map { _ in Float16(Float.random(in: -0.1...0.1, using: &random)) }
        return QuantizedMatrix(rows: rows, columns: columns, bits: bits, groupSize: groupSize,
                               packed: TensorStorage(copying: packed), scales: TensorStorage(copying: scales),
                               biases: TensorStorage(copying: biases))
    }

    /// A prepared backend whose layer-0 qkv matrix is `matrix` (other weights random of `config`'s shapes).
    func backend(config: ModelConfig = smallConfig, qkv: QuantizedMatrix? = nil, contextLength: Int = 512,
                 bits: Int = 4, keysPerChunk: Int? = nil) throws -> (GPUBackend, ModelWeights, RotaryEmbedding) {
        var weights = RandomWeights.make(config: config, seed: random.next(), bits: bits, groupSize: 16)
        if let qkv { weights.layers[0].qkv = qkv }
        let backend = try GPUBackend(context: try TestGPU.context())
        backend.attentionKeysPerChunk = keysPerChunk
        let rotary = RotaryEmbedding(config: config, contextLength: contextLength)
        try backend.prepare(weights: weights, contextLength: contextLength, rotary: rotary)
        return (backend, weights, rotary)
    }

    func tensor(_ backend: GPUBackend, _ values: [Float], rows: Int) throws -> GPUTensor {
        let made = try XCTUnwrap(try backend.makeTensor(rows: rows, columns: values.count / rows) as? GPUTensor)
        try made.buffer.upload(values)
        return made
    }

    func poisoned(_ backend: GPUBackend, rows: Int, columns: Int) throws -> GPUTensor {
        let made = try XCTUnwrap(try backend.makeTensor(rows: rows, columns: columns) as? GPUTensor)
        try made.buffer.fill(poison)
        return made
    }

    func testQuantizedMatmulAtManyShapesBothBitWidths() throws {
        let shapes: [(rows: Int, columns: Int, group: Int, tokens: Int)] = [
            (96, 64, 32, 1), (100, 128, 64, 3), (37, 256, 128, 9), (37, 256, 128, 1), (64, 64, 16, 17), (64, 64, 16, 1),
            (40, 48, 16, 1), (9216, 3072, 64, 1), (3072, 8192, 64, 1), (50, 4160, 32, 1),
        ]
        // Both decode kernels (the staged one takes x through shared memory in chunks of 4096 columns).
        for (bits, matvec) in [(4, "staged"), (8, "staged"), (4, "plain"), (8, "plain")] {
            for shape in shapes where matvec == "staged" || shape.tokens == 1 {
                let matrix = randomMatrix(rows: shape.rows, columns: shape.columns, bits: bits, groupSize: shape.group)
                let config = Self.smallConfig
                let (backend, _, _) = try backend(config: config, qkv: matrix)
                backend.decodeProducts.plain = matvec == "plain"
                let x = random.floats(shape.tokens * shape.columns)
                let input = try tensor(backend, x, rows: shape.tokens)
                let out = try poisoned(backend, rows: shape.tokens, columns: shape.rows)
                try backend.matmul(input, rows: 0..<shape.tokens, weight: WeightName.qkv(layer: 0), into: out)
                let got = try backend.read(out, rows: 0..<shape.tokens)
                let tolerance = shape.tokens == 1 && matvec == "staged" ? decodeProductTolerance(bits: bits) : 2e-4
                assertClose(got, CPUReference.matmul(x, weight: matrix), relative: tolerance,
                            "\(bits)-bit \(matvec) \(shape) \(seedNote)")
                // Only some rows of x (the LM head's last-token case).
                if shape.tokens > 2 {
                    let last = try poisoned(backend, rows: 1, columns: shape.rows)
                    try backend.matmul(input, rows: (shape.tokens - 1)..<shape.tokens, weight: WeightName.qkv(layer: 0), into: last)
                    let lastRow = Array(x[((shape.tokens - 1) * shape.columns)...])
                    assertClose(try backend.read(last, rows: 0..<1), CPUReference.matmul(lastRow, weight: matrix),
                                relative: matvec == "staged" ? decodeProductTolerance(bits: bits) : 2e-4, "last row \(bits)-bit \(shape)")
                }
            }
        }
        try TestGPU.assertNoValidationErrors()
    }

    func testEmbeddingNormSiluAndAdd() throws {
        for bits in [4, 8] {
            let (backend, weights, _) = try backend(bits: bits)
            let config = weights.config
            let ids: [Int32] = (0..<5).map { _ in Int32.random(in: 0..<Int32(config.vocabularySize), using: &random) }
            let embedded = try poisoned(backend, rows: 5, columns: config.hiddenSize)
            try backend.embed(tokens: ids, into: embedded)
            let expectedEmbedding = CPUReference.embed(tokens: ids, table: weights.embedding)
            assertClose(try backend.read(embedded, rows: 0..<5), expectedEmbedding, relative: 1e-6, "embed \(bits)-bit")

            let normed = try poisoned(backend, rows: 5, columns: config.hiddenSize)
            try backend.rmsNorm(embedded, weight: .mlpNorm(layer: 0), count: 5, into: normed)
            let normWeight = weights.layers[0].mlpNorm.withFloats { Array($0.prefix(config.hiddenSize)) }
            assertClose(try backend.read(normed, rows: 0..<5),
                        CPUReference.rmsNorm(expectedEmbedding, weight: normWeight, epsilon: config.rmsNormEpsilon),
                        relative: 1e-5, "rmsNorm")

            let gateUpValues = random.floats(3 * 2 * config.intermediateSize, in: -6...6)
            let gateUp = try tensor(backend, gateUpValues, rows: 3)
            let gated = try poisoned(backend, rows: 3, columns: config.intermediateSize)
            try backend.siluGate(gateUp, count: 3, into: gated)
            assertClose(try backend.read(gated, rows: 0..<3),
                        CPUReference.siluGate(gateUpValues, intermediate: config.intermediateSize), relative: 1e-5, "siluGate")

            let a = random.floats(4 * config.hiddenSize), b = random.floats(4 * config.hiddenSize)
            let accumulator = try tensor(backend, a, rows: 4)
            try backend.add(try tensor(backend, b, rows: 4), count: 4, into: accumulator)
            assertClose(try backend.read(accumulator, rows: 0..<4), zip(a, b).map(+), relative: 1e-6, "add")

            // A one-token product followed by an add into another tensor: fused into the product.
            let x = random.floats(config.headCount * config.headDimension)
            let product = try poisoned(backend, rows: 1, columns: config.hiddenSize)
            let residual = random.floats(config.hiddenSize)
            let sum = try tensor(backend, residual, rows: 1)
            try backend.matmul(try tensor(backend, x, rows: 1), rows: 0..<1, weight: WeightName.attentionOutput(layer: 0), into: product)
            try backend.add(product, count: 1, into: sum)
            let expectedProduct = CPUReference.matmul(x, weight: weights.layers[0].output)
            assertClose(try backend.read(product, rows: 0..<1), expectedProduct, relative: decodeProductTolerance(bits: bits), "fused product \(bits)-bit")
            assertClose(try backend.read(sum, rows: 0..<1), zip(residual, expectedProduct).map(+), relative: decodeProductTolerance(bits: bits), "fused add \(bits)-bit")
        }
        try TestGPU.assertNoValidationErrors()
    }

    /// RoPE into the cache and attention, for a prompt (prefill) then single tokens (decode), past one
    /// workgroup's worth of keys, in both RoPE regimes (short factors at 512, long at 1024). The
    /// decode calls at positions 7 and 8 have all their keys in one chunk (its workgroup writes the
    /// output); the one at 311 spans several (the last workgroup combines them). Phi-3.5-mini's heads
    /// also run with 4 keys a chunk (78 chunks at 311: more than one round of partials per combining
    /// invocation) and with 128 (more than one round of keys and of value rows per invocation).
    func testRopeCacheAndAttentionForPrefillAndDecode() throws {
        // The small GQA shape in both RoPE regimes, then Phi-3.5-mini's heads (32 × 96, all rotated)
        // and Phi-4-mini's (24 on 8 kv heads × 128, 96 rotated).
        var phi35Heads = Self.smallConfig
        (phi35Heads.headCount, phi35Heads.kvHeadCount, phi35Heads.headDimension, phi35Heads.rotaryDimensions) = (32, 32, 96, 96)
        phi35Heads.longRoPE = ModelConfig.LongRoPE(shortFactor: (0..<48).map { 1 + Float($0) / 48 },
                                                   longFactor: (0..<48).map { 1 + Float($0) }, originalContext: 256)
        var phi4Heads = phi35Heads
        (phi4Heads.headCount, phi4Heads.kvHeadCount, phi4Heads.headDimension) = (24, 8, 128)
        let cases: [(ModelConfig, Int, Int?)] = [(Self.smallConfig, 512, nil), (Self.smallConfig, 1024, nil), (phi35Heads, 400, nil),
                                                 (phi35Heads, 400, 4), (phi35Heads, 400, 128), (phi4Heads, 400, nil)]
        let device = try TestGPU.context().device
        let promptKernels = PromptAttention.Kind.allCases.filter {
            PromptAttention.variant($0, headDimension: 16).unmetNeeds(on: device, headDimension: 16) == nil
        }
        for (config, contextLength, keysPerChunk) in cases {
            for promptKernel in promptKernels where keysPerChunk == nil || promptKernel == promptKernels[0] {
                let (backend, weights, rotary) = try backend(config: config, contextLength: contextLength, keysPerChunk: keysPerChunk)
                backend.promptAttentionKind = promptKernel
                let c = weights.config
                let width = c.headCount * c.headDimension
                let kvWidth = c.kvHeadCount * c.headDimension
                var keys: [Float] = []    // (positions, kvHeads, headDim) rotated
                var values: [Float] = []  // (positions, kvHeads, headDim)
                var position = 0
                for count in [7, 1, 3, 300, 1] {
                    let qkvValues = random.floats(count * c.qkvRows, in: -2...2)
                    let qkv = try tensor(backend, qkvValues, rows: count)
                    let queries = try poisoned(backend, rows: count, columns: width)
                    let attended = try poisoned(backend, rows: count, columns: width)
                    // Decode-sized calls: the split attention does the RoPE itself when it directly follows
                    // it (count 1); with 3 tokens the rotated queries are read in between, so both run alone.
                    backend.profiling = count <= 4
                    try backend.rotateAndCache(qkv: qkv, layer: 0, startPosition: position, count: count, queries: queries)
                    if count == 3 {
                        _ = try backend.read(queries, rows: 0..<count)
                        let rope = c.headDimension % 4 == 0 && c.rotaryDimensions % 8 == 0 ? "ropeCacheVec4" : "ropeCache"
                        XCTAssertEqual(backend.lastProfile.map(\.name).sorted(), ["copy", rope])
                    }
                    try backend.attention(queries: queries, layer: 0, startPosition: position, count: count, into: attended)
                    let gotQueries = try backend.read(queries, rows: 0..<count)
                    if count <= 4 {
                        XCTAssertEqual(backend.lastProfile.map(\.name).sorted(), [count == 1 ? "attentionSplitRope" : "attentionSplit", "copy"])
                    }
                    backend.profiling = false
                    let gotAttention = try backend.read(attended, rows: 0..<count)
                    var expectedQueries: [Float] = [], expectedAttention: [Float] = []
                    for t in 0..<count {
                        let row = Array(qkvValues[(t * c.qkvRows)..<((t + 1) * c.qkvRows)])
                        let q = CPUReference.rope(Array(row[0..<width]), heads: c.headCount, headDimension: c.headDimension,
                                                  position: position + t, rotary: rotary)
                        keys += CPUReference.rope(Array(row[width..<(width + kvWidth)]), heads: c.kvHeadCount,
                                                  headDimension: c.headDimension, position: position + t, rotary: rotary)
                        values += row[(width + kvWidth)...]
                        expectedQueries += q
                        expectedAttention += CPUReference.attention(query: q, keys: keys, values: values, headCount: c.headCount,
                                                                    kvHeadCount: c.kvHeadCount, headDimension: c.headDimension)
                    }
                    assertClose(gotQueries, expectedQueries, relative: 1e-5, "rope at \(position)+\(count), ctx \(contextLength)")
                    assertClose(gotAttention, expectedAttention, relative: 3e-3,
                                "attention at \(position)+\(count), ctx \(contextLength), \(count > 4 ? promptKernel.rawValue : "split")")
                    position += count
                }
            }
        }
        try TestGPU.assertNoValidationErrors()
    }

    func testWholeForwardPassMatchesTheCPUBackend() throws {
        let config = Self.smallConfig
        let weights = RandomWeights.make(config: config, seed: random.next(), bits: 4, groupSize: 16)
        let tokens: [Int32] = (0..<11).map { _ in Int32.random(in: 0..<300, using: &random) }
        let gpuBackend = try GPUBackend(context: try TestGPU.context())
        let gpu = try ForwardPass(weights: weights, backend: gpuBackend, contextLength: 64, maxBatch: 8)
        let cpu = try ForwardPass(weights: weights, backend: CPUBackend(threads: 1), contextLength: 64, maxBatch: 8)
        assertClose(try gpu.forward(tokens: tokens, logits: ForwardPass.LogitRows.all), try cpu.forward(tokens: tokens, logits: ForwardPass.LogitRows.all),
                    relative: 1e-3, "prefill logits")
        var recordingsAfterFirstDecode = 0
        for (step, token) in [Int32(5), 17, 299, 42].enumerated() {
            assertClose(try gpu.forward(tokens: [token], logits: ForwardPass.LogitRows.last), try cpu.forward(tokens: [token], logits: ForwardPass.LogitRows.last),
                        relative: 1e-3, "decode logits at step \(step)")
            if step == 0 { recordingsAfterFirstDecode = gpuBackend.recordings }
        }
        XCTAssertEqual(gpuBackend.recordings, recordingsAfterFirstDecode, "decode steps replay one recorded command buffer")
        try TestGPU.assertNoValidationErrors()
    }

    /// argmax.comp against `Sampler.argmax` on fresh random rows (exact: an index): a row whose
    /// largest value appears twice (the first wins), rows shorter and longer than the workgroup,
    /// all-equal and all -inf rows; then greedy decoding through the forward pass, against the
    /// argmax of the logits read back from a second GPU pass (the same arithmetic, so no near-tie
    /// between GPU and CPU rounding can make it flaky).
    func testArgmaxMatchesTheHostIncludingTies() throws {
        let backend = try GPUBackend(context: try TestGPU.context())
        for columns in [1, 100, 256, 257, 50_000] {
            var rows: [[Float]] = (0..<3).map { _ in random.floats(columns, in: -20...20) }
            if columns > 1 {
                let top = (rows[1].max() ?? 0) + 1
                let first = Int.random(in: 0..<columns, using: &random), second = Int.random(in: 0..<columns, using: &random)
                rows[1][max(first, second)] = top
                rows[1][min(first, second)] = top
            }
            rows.append([Float](repeating: 3, count: columns))
            rows.append([Float](repeating: -.infinity, count: columns))
            let made = try tensor(backend, rows.flatMap { $0 }, rows: rows.count)
            for (row, values) in rows.enumerated() {
                XCTAssertEqual(try backend.argmax(made, row: row), Sampler.argmax(values), "row \(row) of \(columns) values")
            }
        }
        let config = Self.smallConfig
        let weights = RandomWeights.make(config: config, seed: random.next(), bits: 4, groupSize: 16)
        let greedy = try ForwardPass(weights: weights, backend: backend, contextLength: 32, maxBatch: 8)
        let reading = try ForwardPass(weights: weights, backend: try GPUBackend(context: try TestGPU.context()), contextLength: 32, maxBatch: 8)
        var greedyToken = try greedy.greedyNext(tokens: [3, 14, 15, 92])
        var readToken = Sampler.argmax(try reading.forward(tokens: [3, 14, 15, 92], logits: .last))
        for step in 0..<6 {
            XCTAssertEqual(greedyToken, readToken, "greedy token at step \(step)")
            greedyToken = try greedy.greedyNext(tokens: [greedyToken])
            readToken = Sampler.argmax(try reading.forward(tokens: [readToken], logits: .last))
        }
        try TestGPU.assertNoValidationErrors()
    }

    func testStepsSubmittedInManySegmentsMatchTheCPUBackend() throws {
        let config = Self.smallConfig
        let weights = RandomWeights.make(config: config, seed: random.next(), bits: 4, groupSize: 16)
        let tokens: [Int32] = (0..<9).map { _ in Int32.random(in: 0..<300, using: &random) }
        // Three commands a segment: every step goes to the GPU in many submissions.
        let gpuBackend = try GPUBackend(context: try TestGPU.context(), segmentLength: 3)
        let gpu = try ForwardPass(weights: weights, backend: gpuBackend, contextLength: 32, maxBatch: 4)
        let cpu = try ForwardPass(weights: weights, backend: CPUBackend(threads: 1), contextLength: 32, maxBatch: 4)
        assertClose(try gpu.forward(tokens: tokens, logits: .all), try cpu.forward(tokens: tokens, logits: .all),
                    relative: 1e-3, "prefill logits in segments")
        var recordingsAfterFirstDecode = 0
        for (step, token) in [Int32(7), 123, 250].enumerated() {
            let submissionsBefore = gpuBackend.submissions
            assertClose(try gpu.forward(tokens: [token], logits: .last), try cpu.forward(tokens: [token], logits: .last),
                        relative: 1e-3, "decode logits in segments at step \(step)")
            XCTAssertGreaterThan(gpuBackend.submissions - submissionsBefore, 3, "a decode step is submitted in several segments")
            if step == 0 { recordingsAfterFirstDecode = gpuBackend.recordings }
        }
        XCTAssertEqual(gpuBackend.recordings, recordingsAfterFirstDecode, "decode steps replay every segment's recording")
        try TestGPU.assertNoValidationErrors()
    }

    /// The shapes `GPUBackend` dispatches the prompt attentions with and checks devices against are
    /// the ones their variants are compiled with.
    func testPromptAttentionShapeIsTheCompiledOne() throws {
        let variants = try VariantsJSON.load()
        for kernel in [PromptAttention.scalar, PromptAttention.cooperativeMatrix, PromptAttention.cooperativeMatrixNarrow] {
            let defines = try XCTUnwrap(variants.defines(of: kernel.shader.name))
            XCTAssertEqual(defines["THREADS"], "\(kernel.threads)")
            XCTAssertEqual(defines["K_BLOCK"], "\(kernel.keyBlock)")
            XCTAssertEqual(defines["MAX_HEAD_DIM"], "\(kernel.maxHeadDimension)")
        }
        XCTAssertEqual(PromptAttention.scalar.queries, 32)
        XCTAssertEqual(PromptAttention.cooperativeMatrix.queries, 64)
        XCTAssertEqual(PromptAttention.scalar.sharedBytes, 29_184, "attention.comp's shared arrays at these defines")
        XCTAssertEqual(PromptAttention.cooperativeMatrix.sharedBytes, 33_024, "attention_coopmat.comp's shared arrays at these defines")
        XCTAssertEqual(PromptAttention.cooperativeMatrixNarrow.sharedBytes, 41_728, "attention_coopmat.comp's shared arrays at these defines")
        // Heads of up to 96 dimensions take 48 keys a step, wider ones 32.
        XCTAssertEqual(PromptAttention.variant(.cooperativeMatrix, headDimension: 96).keyBlock, 48)
        XCTAssertEqual(PromptAttention.variant(.cooperativeMatrix, headDimension: 128).keyBlock, 32)
        XCTAssertEqual(PromptAttention.variant(.scalar, headDimension: 96).keyBlock, 16)
    }

    /// The prompt attention is cooperative exactly where the device offers what it needs; naming
    /// one that cannot run, or none, is a clear error.
    func testPromptAttentionChoice() throws {
        let device = try TestGPU.context().device
        let cooperative = PromptAttention.cooperativeMatrix.unmetNeeds(on: device, headDimension: 96) == nil
        XCTAssertEqual(cooperative, device.enabled.cooperativeMatrixNV && device.enabled.float16 && device.physical.subgroupSize == 32)
        XCTAssertEqual(try PromptAttention.choose(device: device, headDimension: 96, environment: [:]).kind,
                       cooperative ? .cooperativeMatrix : .scalar)
        XCTAssertEqual(try PromptAttention.choose(device: device, headDimension: 96, environment: [PromptAttention.environmentVariable: "scalar"]).kind,
                       .scalar)
        XCTAssertEqual(try PromptAttention.choose(device: device, headDimension: 72, environment: [:]).kind, .scalar,
                       "heads that are not a multiple of 16 take the scalar kernel")
        XCTAssertThrowsError(try PromptAttention.choose(device: device, headDimension: 96,
                                                        environment: [PromptAttention.environmentVariable: "fastest"])) { error in
            XCTAssertTrue("\(error)".contains("PHI_GPU_PROMPT_ATTENTION=fastest") && "\(error)".contains("cooperativeMatrix"), "\(error)")
        }
        XCTAssertThrowsError(try PromptAttention.choose(device: device, headDimension: 72,
                                                        environment: [PromptAttention.environmentVariable: "cooperativeMatrix"])) { error in
            XCTAssertTrue("\(error)".contains("head dimension 72") && "\(error)".contains("multiple of 16"), "\(error)")
        }
        XCTAssertThrowsError(try PromptAttention.choose(device: device, headDimension: 200, environment: [:])) { error in
            XCTAssertTrue("\(error)".contains("head dimension 200") && "\(error)".contains("--cpu"), "\(error)")
        }
    }

    /// The cooperative prompt attention pairs its query groups (the last with the first, ...) where
    /// the groups' key counts differ by more than a factor of 2 (a prompt from position 0 or near
    /// it) and there are more unpaired workgroups than multiprocessors.
    func testPromptAttentionPairsTheQueryGroupsOfAFirstChunk() {
        func pairs(_ groups: Int, from start: Int, heads: Int = 32, multiprocessors: Int? = 132, _ environment: [String: String] = [:]) -> Bool {
            PromptAttention.pairs(groups: groups, heads: heads, startPosition: start, queries: 64, multiprocessors: multiprocessors,
                                  environment: environment)
        }
        XCTAssertTrue(pairs(8, from: 0))
        XCTAssertTrue(pairs(32, from: 1000))
        XCTAssertTrue(pairs(8, from: 0, heads: 24), "Phi-4-mini: 192 workgroups")
        XCTAssertTrue(pairs(2, from: 0, multiprocessors: nil))
        XCTAssertFalse(pairs(8, from: 512), "keys 512-1024: within 2x")
        XCTAssertFalse(pairs(8, from: 4096))
        XCTAssertFalse(pairs(4, from: 0), "128 workgroups run side by side on 132 multiprocessors")
        XCTAssertFalse(pairs(1, from: 0), "one group has no partner")
        XCTAssertTrue(pairs(8, from: 4096, [PromptAttention.pairsVariable: "1"]))
        XCTAssertFalse(pairs(8, from: 0, [PromptAttention.pairsVariable: "0"]))
    }

    /// Decode products with fewer workgroups than multiprocessors take fewer rows per subgroup.
    func testDecodeProductsFillTheMultiprocessors() {
        XCTAssertEqual(MatvecKernel.filling(132, rows: 3072, rowsPerSubgroup: 4, subgroups: 8, parts: 1), 2, "o: 96 -> 192 workgroups")
        XCTAssertEqual(MatvecKernel.filling(132, rows: 3072, rowsPerSubgroup: 4, subgroups: 8, parts: 2), 4, "down: 2 parts of 96")
        XCTAssertEqual(MatvecKernel.filling(132, rows: 9216, rowsPerSubgroup: 4, subgroups: 8, parts: 1), 4, "qkv: 288 workgroups")
        XCTAssertEqual(MatvecKernel.filling(132, rows: 64, rowsPerSubgroup: 4, subgroups: 8, parts: 1), 1, "no fewer than 1")
        XCTAssertEqual(MatvecKernel.filling(132, rows: 3072, rowsPerSubgroup: 3, subgroups: 8, parts: 1), 1, "3 -> 1: 384 workgroups")
    }

    func testNotEnoughMemoryIsAClearError() throws {
        let backend = try GPUBackend(context: try TestGPU.context())
        var config = Self.smallConfig
        config.layerCount = 1
        let weights = RandomWeights.make(config: config, seed: 1, bits: 4, groupSize: 16)
        let huge = 1 << 30  // positions: a KV cache of tens of GiB
        XCTAssertThrowsError(try backend.prepare(weights: weights, contextLength: huge,
                                                 rotary: RotaryEmbedding(config: config, contextLength: 16))) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("not enough GPU memory") && text.contains("--ctx") && text.contains("--cpu")
                          && text.contains("PHI_GPU_BATCH"), text)
        }
    }
}
