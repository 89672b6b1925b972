import Foundation
import PhiFormats
import PhiModel
import TestSupport
import XCTest

/// A tiny phi3 GGUF (fused attn_qkv and ffn_up, rope_factors_* tensors, separate output) made by
/// Scripts/fixtures/make_gguf_references.py, against gguf.quants' dequantized rows.
final class TinyPhi3GGUFTests: XCTestCase {
    struct Matrix: Decodable {
        let shape: [Int]
        let rows: [String: [Float]]
    }

    func testLoadsPhi3GGUF() throws {
        let directory = TestPaths.fixtures.appendingPathComponent("tiny-gguf")
        let url = try TestPaths.require(directory.appendingPathComponent("tiny-phi3-q8.gguf"),
                                        hint: "run Scripts/fixtures/make_gguf_references.py")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: directory.appendingPathComponent("tiny-phi3-q8.json"))) as? [String: Any]
        let checkpoint = try CheckpointLoader.load(from: url)
        let config = checkpoint.weights.config
        XCTAssertEqual(config.architecture, .phi3)
        XCTAssertEqual([config.hiddenSize, config.intermediateSize, config.layerCount, config.headCount, config.kvHeadCount],
                       [64, 128, 2, 4, 2])
        XCTAssertEqual([config.headDimension, config.rotaryDimensions, config.vocabularySize, config.maxContext], [16, 12, 512, 131072])
        XCTAssertFalse(config.tiedEmbeddings)
        XCTAssertEqual(config.longRoPE?.originalContext, 4096)
        XCTAssertEqual(config.longRoPE?.longFactor.count, 6)
        XCTAssertEqual(config.longRoPE?.longFactor.first, 1)
        XCTAssertEqual(config.longRoPE?.longFactor.last, 30)
        XCTAssertEqual(config.longRoPE?.shortFactor.last, 1.2)
        XCTAssertEqual(checkpoint.eosTokenIds, [256, 7])

        let w = checkpoint.weights
        let places: [String: QuantizedMatrix] = [
            "token_embd.weight": w.embedding, "output.weight": w.lmHead,
            "blk.0.attn_qkv.weight": w.layers[0].qkv, "blk.1.attn_output.weight": w.layers[1].output,
            "blk.0.ffn_up.weight": w.layers[0].gateUp, "blk.1.ffn_down.weight": w.layers[1].down,
        ]
        for (name, matrix) in places {
            let entry = try XCTUnwrap(json?[name] as? [String: Any], name)
            let data = try JSONSerialization.data(withJSONObject: entry)
            let expected = try JSONDecoder().decode(Matrix.self, from: data)
            XCTAssertEqual([matrix.rows, matrix.columns], expected.shape, name)
            var row = [Float](repeating: 0, count: matrix.columns)
            for (index, values) in expected.rows {
                let r = try XCTUnwrap(Int(index))
                row.withUnsafeMutableBufferPointer { matrix.dequantizeRow(r, into: $0) }
                // Q8_0 is exact; the F16 embedding is requantized to 8-bit groups of 32.
                let tolerance: Float = name == "token_embd.weight" ? 0.0005 : 0
                XCTAssertLessThanOrEqual(maxAbsoluteDifference(row, values), tolerance, "\(name) row \(r)")
            }
        }
        XCTAssertEqual(w.finalNorm.withFloats { Array($0) }, (json?["output_norm.weight"] as? [NSNumber])?.map(\.floatValue))
    }
}
