import Foundation
import PhiFormats
import PhiModel
import TestSupport
import XCTest

/// A llama MLX checkpoint written here: separate q/k/v and gate/up projections with mixed
/// per-layer quantization (config.json overrides) and an unquantized BF16 embedding.
final class LlamaSafetensorsTests: XCTestCase {
    func testFusesMixedQuantizationAndConvertsUnquantized() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("phi-gpu-llama-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let nowhere = directory.appendingPathComponent("source")
        var random = SeededRandom(seed: 11)
        var writer = SafetensorsWriter()
        var reference: [String: [Float]] = [:]

        func addQuantized(_ name: String, rows: Int, columns: Int, bits: Int, group: Int) throws {
            let m = try QuantizedMatrix.quantizing(random.floats(rows * columns, in: -0.1...0.1), rows: rows, columns: columns,
                                                   bits: bits, groupSize: group, tensor: name, file: nowhere)
            writer.add(name + ".weight", shape: [rows, columns * bits / 32], uint32: m.packed.withWords { Array($0) })
            writer.add(name + ".scales", shape: [rows, columns / group], float16: m.scales.withHalves { $0.map(Float.init) })
            writer.add(name + ".biases", shape: [rows, columns / group], float32: m.biases.withHalves { $0.map(Float.init) })
            reference[name] = m.dequantized()
        }
        // hidden 64, 4 heads of 16, 2 kv heads, intermediate 128, vocab 32, one layer.
        let embedding = random.floats(32 * 64).map { Float(bitPattern: $0.bitPattern & 0xFFFF_0000) }  // exact in BF16
        writer.add("model.embed_tokens.weight", shape: [32, 64], bfloat16: embedding)
        let p = "model.layers.0."
        try addQuantized(p + "self_attn.q_proj", rows: 64, columns: 64, bits: 4, group: 32)
        try addQuantized(p + "self_attn.k_proj", rows: 32, columns: 64, bits: 8, group: 64)
        try addQuantized(p + "self_attn.v_proj", rows: 32, columns: 64, bits: 8, group: 64)
        try addQuantized(p + "self_attn.o_proj", rows: 64, columns: 64, bits: 8, group: 64)
        try addQuantized(p + "mlp.gate_proj", rows: 128, columns: 64, bits: 8, group: 64)
        try addQuantized(p + "mlp.up_proj", rows: 128, columns: 64, bits: 8, group: 64)
        try addQuantized(p + "mlp.down_proj", rows: 64, columns: 128, bits: 8, group: 64)
        let norm = random.floats(64, in: 0.5...1.5)
        writer.add(p + "input_layernorm.weight", shape: [64], float32: norm)
        writer.add(p + "post_attention_layernorm.weight", shape: [64], float16: norm.map { Float(Float16($0)) })
        writer.add("model.norm.weight", shape: [64], float32: norm)
        try writer.write(to: directory.appendingPathComponent("model.safetensors"))
        let config: [String: Any] = [
            "model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
            "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 32, "rms_norm_eps": 1e-6,
            "rope_theta": 500000.0, "max_position_embeddings": 2048, "tie_word_embeddings": true, "eos_token_id": 5,
            "quantization": ["bits": 8, "group_size": 64, "mode": "affine",
                             "model.layers.0.self_attn.q_proj": ["bits": 4, "group_size": 32], "model.embed_tokens": false],
        ]
        try JSONSerialization.data(withJSONObject: config).write(to: directory.appendingPathComponent("config.json"))

        let checkpoint = try CheckpointLoader.load(from: directory)
        let c = checkpoint.weights.config
        XCTAssertEqual(c.architecture, .llama)
        XCTAssertEqual([c.headDimension, c.rotaryDimensions, c.qkvRows], [16, 16, 128])
        XCTAssertEqual(c.ropeTheta, 500000)
        XCTAssertNil(c.longRoPE)
        XCTAssertEqual(checkpoint.eosTokenIds, [5])
        let layer = checkpoint.weights.layers[0]
        XCTAssertEqual([layer.qkv.bits, layer.qkv.groupSize], [8, 32])  // widened to the finest parts
        XCTAssertEqual(layer.qkv.dequantized(),
                       reference[p + "self_attn.q_proj"]! + reference[p + "self_attn.k_proj"]! + reference[p + "self_attn.v_proj"]!)
        XCTAssertEqual(layer.gateUp.dequantized(), reference[p + "mlp.gate_proj"]! + reference[p + "mlp.up_proj"]!)
        XCTAssertEqual(layer.down.dequantized(), reference[p + "mlp.down_proj"])
        XCTAssertEqual(layer.output.dequantized(), reference[p + "self_attn.o_proj"])
        XCTAssertEqual(layer.attentionNorm.withFloats { Array($0) }, norm)
        XCTAssertEqual(layer.mlpNorm.withFloats { Array($0) }, norm.map { Float(Float16($0)) })
        let embedded = checkpoint.weights.embedding
        XCTAssertEqual([embedded.bits, embedded.groupSize], [QuantizedMatrix.unquantizedBits, QuantizedMatrix.unquantizedGroupSize])
        XCTAssertLessThanOrEqual(maxAbsoluteDifference(embedded.dequantized(), embedding), 2.0 / 510 + 0.002)
        XCTAssertEqual(checkpoint.weights.lmHead.rows, 32)
    }
}
