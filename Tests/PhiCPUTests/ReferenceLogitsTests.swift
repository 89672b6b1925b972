import Foundation
import PhiModel
import TestSupport
import XCTest
@testable import PhiCPU

/// Acceptance: the tiny 4-bit MLX fixtures give the logits of transformers (float32, context 4096,
/// LongRoPE short factors) and of mlx-lm (float32, long factors: a context above 4096) within 1e-3.
/// Expected values: Tests/Fixtures/reference-logits, made by Scripts/reference/make_reference_logits.py.
final class ReferenceLogitsTests: XCTestCase {
    private struct Expected: Decodable {
        struct Logits: Decodable {
            var probe_logits: [[Float]]
            var argmax: [Int]
            var logsumexp: [Float]
        }
        var ids: [Int32]
        var probe_ids: [Int]
        var transformers_context_4096: Logits
        var mlx_lm_long_factors: Logits
    }

    private func check(fixture: String) throws {
        let directory = try TestPaths.require(TestPaths.fixtures.appendingPathComponent(fixture),
                                              hint: "run Scripts/fixtures/make_tiny_models.py")
        let referenceFile = try TestPaths.require(
            TestPaths.fixtures.appendingPathComponent("reference-logits/\(fixture).json"),
            hint: "run python3 Scripts/reference/make_reference_logits.py")
        let expected = try JSONDecoder().decode(Expected.self, from: Data(contentsOf: referenceFile))
        let weights = try CheckpointLoader.load(from: directory).weights
        let vocabulary = weights.config.vocabularySize
        for (contextLength, reference, label) in [(4096, expected.transformers_context_4096, "transformers ctx 4096"),
                                                  (8192, expected.mlx_lm_long_factors, "mlx-lm long factors")] {
            let pass = try ForwardPass(weights: weights, backend: CPUBackend(threads: 2),
                                       contextLength: contextLength, maxBatch: 8)
            let logits = try pass.forward(tokens: expected.ids, logits: .all)  // (ids, vocabulary)
            var worst: Float = 0
            for position in expected.ids.indices {
                let row = Array(logits[(position * vocabulary)..<((position + 1) * vocabulary)])
                let probes = expected.probe_ids.map { row[$0] }
                worst = max(worst, maxAbsoluteDifference(probes, reference.probe_logits[position]))
                XCTAssertEqual(Int(Sampler.argmax(row)), reference.argmax[position], "\(fixture) \(label) position \(position)")
                XCTAssertEqual(Self.logSumExp(row), reference.logsumexp[position], accuracy: 1e-3,
                               "\(fixture) \(label) position \(position)")
            }
            XCTAssertLessThan(worst, 1e-3, "\(fixture) \(label): largest logit difference")
        }
    }

    static func logSumExp(_ row: [Float]) -> Float {
        let peak = row.max() ?? 0
        return peak + Float(log(row.reduce(0.0) { $0 + exp(Double($1 - peak)) }))
    }

    func testTinyPhi35MatchesTransformersAndMLX() throws { try check(fixture: "tiny-phi3.5-4bit") }

    func testTinyPhi4MiniMatchesTransformersAndMLX() throws { try check(fixture: "tiny-phi4-mini-4bit") }
}
