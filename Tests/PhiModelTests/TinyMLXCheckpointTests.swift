import Foundation
import PhiFormats
import PhiModel
import TestSupport
import XCTest

/// Loads the tiny MLX 4-bit checkpoints made by Scripts/fixtures/make_tiny_models.py and compares
/// config and dequantized weights with the values mlx exported beside them.
final class TinyMLXCheckpointTests: XCTestCase {
    /// `Tests/Fixtures/tiny-references/<name>.json`, written by the fixture script.
    struct Reference: Decodable {
        struct Matrix: Decodable {
            let shape: [Int]
            let rows: [String: [Float]]
            let sum: Double
        }
        struct RopeScaling: Decodable {
            let long_factor: [Float]
            let short_factor: [Float]
        }
        struct Config: Decodable {
            let hidden_size, intermediate_size, num_hidden_layers, num_attention_heads: Int
            let num_key_value_heads, vocab_size, max_position_embeddings, original_max_position_embeddings: Int
            let rms_norm_eps, rope_theta: Float
            let tie_word_embeddings: Bool
        }
        let config: Config
        let rope_scaling: RopeScaling
        let partial_rotary_factor: Double
        let eos_token_ids: [Int]
        let matrices: [String: Matrix]
        let norms: [String: [Float]]
    }

    static func fixture(_ name: String) throws -> (URL, Reference) {
        let directory = try TestPaths.require(TestPaths.fixtures.appendingPathComponent(name),
                                              hint: "run Scripts/fixtures/make_tiny_models.py")
        let referenceURL = TestPaths.fixtures.appendingPathComponent("tiny-references/\(name).json")
        let reference = try JSONDecoder().decode(Reference.self, from: Data(contentsOf: referenceURL))
        return (directory, reference)
    }

    /// The engine matrix holding the Hugging Face module `path`.
    static func matrix(_ path: String, in weights: ModelWeights) throws -> QuantizedMatrix {
        if path == "model.embed_tokens" { return weights.embedding }
        if path == "lm_head" { return weights.lmHead }
        let parts = path.split(separator: ".")
        guard parts.count == 5, let index = Int(parts[2]), index < weights.layers.count else {
            throw MissingTestData(description: "unexpected module \(path)")
        }
        let layer = weights.layers[index]
        switch parts[4] {
        case "qkv_proj": return layer.qkv
        case "o_proj": return layer.output
        case "gate_up_proj": return layer.gateUp
        case "down_proj": return layer.down
        default: throw MissingTestData(description: "unexpected module \(path)")
        }
    }

    static func norm(_ path: String, in weights: ModelWeights) -> [Float] {
        let storage: TensorStorage
        if path == "model.norm" {
            storage = weights.finalNorm
        } else {
            let parts = path.split(separator: ".")
            let layer = weights.layers[Int(parts[2]) ?? 0]
            storage = parts[3] == "input_layernorm" ? layer.attentionNorm : layer.mlpNorm
        }
        return storage.withFloats { Array($0) }
    }

    func checkWeights(_ checkpoint: Checkpoint, against reference: Reference) throws {
        for (path, expected) in reference.matrices {
            let matrix = try Self.matrix(path, in: checkpoint.weights)
            XCTAssertEqual([matrix.rows, matrix.columns], expected.shape, path)
            XCTAssertEqual(matrix.bits, 4, path)
            XCTAssertEqual(matrix.groupSize, 64, path)
            var row = [Float](repeating: 0, count: matrix.columns)
            for (index, values) in expected.rows {
                let r = try XCTUnwrap(Int(index))
                row.withUnsafeMutableBufferPointer { matrix.dequantizeRow(r, into: $0) }
                XCTAssertLessThanOrEqual(maxAbsoluteDifference(row, values), 1e-6, "\(path) row \(r)")
            }
            let sum = matrix.dequantized().reduce(0.0) { $0 + Double($1) }
            XCTAssertEqual(sum, expected.sum, accuracy: 1e-3 * max(1, abs(expected.sum)), "\(path) sum")
        }
        for (path, expected) in reference.norms {
            XCTAssertEqual(Self.norm(path, in: checkpoint.weights), expected, path)
        }
    }

    func checkConfig(_ config: ModelConfig, against reference: Reference) {
        let c = reference.config
        XCTAssertEqual(config.architecture, .phi3)
        XCTAssertEqual(config.hiddenSize, c.hidden_size)
        XCTAssertEqual(config.intermediateSize, c.intermediate_size)
        XCTAssertEqual(config.layerCount, c.num_hidden_layers)
        XCTAssertEqual(config.headCount, c.num_attention_heads)
        XCTAssertEqual(config.kvHeadCount, c.num_key_value_heads)
        XCTAssertEqual(config.vocabularySize, c.vocab_size)
        XCTAssertEqual(config.maxContext, c.max_position_embeddings)
        XCTAssertEqual(config.ropeTheta, c.rope_theta)
        XCTAssertEqual(config.rmsNormEpsilon, c.rms_norm_eps)
        XCTAssertEqual(config.headDimension, config.hiddenSize / config.headCount)
        XCTAssertEqual(config.rotaryDimensions, Int(Double(config.headDimension) * reference.partial_rotary_factor))
        XCTAssertEqual(config.tiedEmbeddings, c.tie_word_embeddings)
        XCTAssertEqual(config.longRoPE?.shortFactor, reference.rope_scaling.short_factor)
        XCTAssertEqual(config.longRoPE?.longFactor, reference.rope_scaling.long_factor)
        XCTAssertEqual(config.longRoPE?.originalContext, c.original_max_position_embeddings)
    }

    func testTinyPhi35() throws {
        let (directory, reference) = try Self.fixture("tiny-phi3.5-4bit")
        var fractions: [Double] = []
        let checkpoint = try CheckpointLoader.load(from: directory) { fractions.append($0) }
        checkConfig(checkpoint.weights.config, against: reference)
        XCTAssertEqual(checkpoint.weights.config.rotaryDimensions, 16)
        XCTAssertEqual(checkpoint.weights.config.qkvRows, 192)
        XCTAssertFalse(checkpoint.weights.config.tiedEmbeddings)
        XCTAssertEqual(checkpoint.eosTokenIds, [32007, 32001, 32000])
        XCTAssertEqual(checkpoint.eosTokenIds, reference.eos_token_ids)
        XCTAssertEqual(checkpoint.directory, directory)
        guard case .mlxDirectory = checkpoint.source else { return XCTFail("source should be an MLX directory") }
        XCTAssertEqual(fractions.first, 0)
        XCTAssertEqual(fractions.last, 1)
        XCTAssertEqual(fractions, fractions.sorted())
        XCTAssertNotNil(reference.matrices["lm_head"])
        try checkWeights(checkpoint, against: reference)
    }

    func testTinyPhi4Mini() throws {
        let (directory, reference) = try Self.fixture("tiny-phi4-mini-4bit")
        let checkpoint = try CheckpointLoader.load(from: directory)
        let config = checkpoint.weights.config
        checkConfig(config, against: reference)
        XCTAssertEqual(config.kvHeadCount, 2)
        XCTAssertEqual(config.headDimension, 16)
        XCTAssertEqual(config.rotaryDimensions, 12)  // 0.75 of 16, as Phi-4-mini rotates 96 of 128
        XCTAssertEqual(config.qkvRows, (4 + 2 * 2) * 16)
        XCTAssertTrue(config.tiedEmbeddings)
        XCTAssertEqual(checkpoint.eosTokenIds, [32007, 32000])
        XCTAssertNil(reference.matrices["lm_head"])
        XCTAssertTrue(checkpoint.weights.lmHead.packed.bytes.baseAddress == checkpoint.weights.embedding.packed.bytes.baseAddress,
                      "a tied LM head shares the embedding's storage")
        try checkWeights(checkpoint, against: reference)
    }
}
