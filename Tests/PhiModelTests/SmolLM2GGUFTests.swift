import Foundation
import PhiFormats
import PhiModel
import TestSupport
import XCTest

/// Loads the real SmolLM2-135M-Instruct Q4_1 GGUF (llama: Q8_0 embedding, Q4_1 layers) and
/// compares rows with `gguf.quants.dequantize` (Tests/Fixtures/tiny-gguf/smollm2-rows.json, made by
/// Scripts/fixtures/make_gguf_references.py, Q/K rows un-permuted in numpy).
final class SmolLM2GGUFTests: XCTestCase {
    struct Reference: Decodable {
        struct Matrix: Decodable {
            let shape: [Int]
            let rows: [String: [Float]]
        }
        let matrices: [String: Matrix]
        let norm: [Float]
        enum CodingKeys: String, CodingKey {
            case matrices, norm = "blk.0.attn_norm.weight"
        }
    }

    func testLoadsAndMatchesReferenceRows() throws {
        let url = try TestPaths.require(TestPaths.smolLM2, hint: "run `bash Scripts/fetch-smollm2.sh` (or set PHI_GPU_SMOLLM2)")
        let reference = try JSONDecoder().decode(Reference.self, from: Data(contentsOf:
            TestPaths.fixtures.appendingPathComponent("tiny-gguf/smollm2-rows.json")))
        let checkpoint = try CheckpointLoader.load(from: url)
        let config = checkpoint.weights.config
        XCTAssertEqual(config.architecture, .llama)
        XCTAssertEqual([config.hiddenSize, config.intermediateSize, config.layerCount], [576, 1536, 30])
        XCTAssertEqual([config.headCount, config.kvHeadCount, config.headDimension, config.rotaryDimensions], [9, 3, 64, 64])
        XCTAssertEqual(config.vocabularySize, 49152)
        XCTAssertEqual(config.ropeTheta, 100000)
        XCTAssertEqual(config.maxContext, 8192)
        XCTAssertEqual(config.rmsNormEpsilon, 9.999999747378752e-06)
        XCTAssertNil(config.longRoPE)
        XCTAssertTrue(config.tiedEmbeddings)
        XCTAssertEqual(checkpoint.eosTokenIds, [2])
        XCTAssertEqual(checkpoint.directory, url.deletingLastPathComponent())
        guard case .gguf(let file) = checkpoint.source else { return XCTFail("source should be the GGUF file") }
        XCTAssertEqual(file.metadata["tokenizer.ggml.tokens"]?.arrayValue?.count, 49152)

        let weights = checkpoint.weights
        let layer0 = weights.layers[0], layer29 = weights.layers[29]
        let qRows = 576, kvRows = 192
        // (engine matrix, first row of the GGUF tensor inside it)
        let places: [String: (QuantizedMatrix, Int)] = [
            "token_embd.weight": (weights.embedding, 0),
            "blk.0.attn_q.weight": (layer0.qkv, 0),
            "blk.0.attn_k.weight": (layer0.qkv, qRows),
            "blk.0.attn_v.weight": (layer0.qkv, qRows + kvRows),
            "blk.0.attn_output.weight": (layer0.output, 0),
            "blk.29.ffn_gate.weight": (layer29.gateUp, 0),
            "blk.29.ffn_up.weight": (layer29.gateUp, 1536),
            "blk.29.ffn_down.weight": (layer29.down, 0),
        ]
        XCTAssertEqual(Set(places.keys), Set(reference.matrices.keys))
        XCTAssertEqual([weights.embedding.bits, weights.embedding.groupSize], [8, 32])  // Q8_0
        XCTAssertEqual([layer0.output.bits, layer0.output.groupSize], [4, 32])          // Q4_1
        XCTAssertEqual(layer0.qkv.rows, qRows + 2 * kvRows)
        XCTAssertEqual(weights.lmHead.rows, 49152)
        for (name, (matrix, offset)) in places {
            let expected = try XCTUnwrap(reference.matrices[name])
            XCTAssertEqual(matrix.columns, expected.shape[1], name)
            var row = [Float](repeating: 0, count: matrix.columns)
            for (index, values) in expected.rows {
                let r = try XCTUnwrap(Int(index))
                row.withUnsafeMutableBufferPointer { matrix.dequantizeRow(offset + r, into: $0) }
                // Q4_1 and Q8_0 map onto affine groups exactly.
                XCTAssertEqual(row, values, "\(name) row \(r)")
            }
        }
        XCTAssertEqual(layer0.attentionNorm.withFloats { Array($0) }, reference.norm)
    }
}
