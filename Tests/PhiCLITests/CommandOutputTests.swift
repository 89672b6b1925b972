import Foundation
import TestSupport
import XCTest

/// `generate --json`, `score --json`, `tokenize` and `bench` on the tiny fixture and SmolLM2,
/// checked against references made by transformers / the Hugging Face tokenizers.
final class CommandOutputTests: XCTestCase {
    struct GenerateReport: Decodable {
        var promptIds: [Int32]
        var ids: [Int32]
        var text: String
        var stopReason: String
        var promptTokens: Int
        var generatedTokens: Int
        var promptTokensPerSecond: Double
    }

    struct ScoreReport: Decodable {
        struct Position: Decodable {
            var id: Int32
            var topIds: [Int32]
            var topLogits: [Float]
            var logsumexp: Float
        }
        var ids: [Int32]
        var positions: [Position]
        var perplexity: Double?
    }

    /// Tests/Fixtures/cli/tiny-phi3.5-4bit.json, by Scripts/reference/make_cli_references.py.
    struct TinyReference: Decodable {
        struct Generate: Decodable {
            var system: String
            var question: String
            var maxTokens: Int
            var promptIds: [Int32]
            var ids: [Int32]
        }
        struct Score: Decodable {
            var ids: [Int32]
            var perplexity: Double
        }
        var generate: Generate
        var score: Score
    }

    private func tinyReference() throws -> TinyReference {
        let file = try TestPaths.require(TestPaths.fixtures.appendingPathComponent("cli/tiny-phi3.5-4bit.json"),
                                         hint: "run python3 Scripts/reference/make_cli_references.py")
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(TinyReference.self, from: Data(contentsOf: file))
    }

    func testGenerateJSONOnTinyPhi35MatchesTransformersGreedy() throws {
        let model = try CLIModels.tinyPhi35()
        defer { try? FileManager.default.removeItem(at: model) }
        let expected = try tinyReference().generate
        let report = try CLIRunner.json(GenerateReport.self, [
            "generate", "--model", model.path, "--cpu", "--temperature", "0", "--max-tokens", "\(expected.maxTokens)",
            "--system", expected.system, "--json", expected.question])
        XCTAssertEqual(report.promptIds, expected.promptIds)
        XCTAssertEqual(report.ids, expected.ids)
        XCTAssertEqual(report.generatedTokens, expected.ids.count)
        XCTAssertEqual(report.promptTokens, expected.promptIds.count)
        XCTAssertEqual(report.stopReason, expected.ids.count == expected.maxTokens ? "max_tokens" : "stop_token")
        XCTAssertGreaterThan(report.promptTokensPerSecond, 0)
    }

    func testScoreJSONOnTinyPhi35MatchesTransformers() throws {
        struct Logits: Decodable {
            struct Reference: Decodable {
                var argmax: [Int32]
                var logsumexp: [Float]
            }
            var ids: [Int32]
            var transformersContext4096: Reference
        }
        let model = try CLIModels.tinyPhi35()
        defer { try? FileManager.default.removeItem(at: model) }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let logits = try decoder.decode(Logits.self, from: Data(contentsOf: TestPaths.require(
            TestPaths.fixtures.appendingPathComponent("reference-logits/tiny-phi3.5-4bit.json"),
            hint: "run python3 Scripts/reference/make_reference_logits.py")))
        let expected = try tinyReference().score
        XCTAssertEqual(logits.ids, expected.ids)
        let report = try CLIRunner.json(ScoreReport.self, [
            "score", "--model", model.path, "--cpu", "--ctx", "4096", "--top-k", "3", "--json",
            "--ids", expected.ids.map(String.init).joined(separator: ",")])
        XCTAssertEqual(report.ids, expected.ids)
        XCTAssertEqual(report.positions.count, expected.ids.count)
        for (index, position) in report.positions.enumerated() {
            XCTAssertEqual(position.id, expected.ids[index])
            XCTAssertEqual(position.topIds.count, 3)
            XCTAssertEqual(position.topIds.first, logits.transformersContext4096.argmax[index], "position \(index)")
            XCTAssertEqual(position.logsumexp, logits.transformersContext4096.logsumexp[index], accuracy: 1e-3, "position \(index)")
            XCTAssertEqual(position.topLogits, position.topLogits.sorted(by: >))
        }
        XCTAssertEqual(report.perplexity ?? 0, expected.perplexity, accuracy: expected.perplexity * 1e-3)
    }

    func testTokenizeMatchesHuggingFaceTokenizers() throws {
        struct Expected: Decodable { var ids: [[Int]] }
        struct Report: Decodable {
            var ids: [Int]
            var tokens: [String]
        }
        let model = try CLIModels.smolLM2()
        let corpus = try JSONDecoder().decode([String].self, from: Data(contentsOf: TestPaths.fixtures.appendingPathComponent("tokenizer/corpus.json")))
        let expected = try JSONDecoder().decode(Expected.self, from: Data(contentsOf: TestPaths.fixtures.appendingPathComponent("tokenizer/expected-smollm2.json")))
        // Plain texts spread over the corpus (the expected ids parse special tokens, which plain
        // `tokenize` does not; those are checked with --special below).
        // (Texts with NUL cannot be passed as arguments.)
        let plainTexts = corpus.indices.filter { !corpus[$0].contains("<") && !corpus[$0].contains("\u{0}") && corpus[$0].count > 8 }
        XCTAssertGreaterThan(plainTexts.count, 50)
        for index in stride(from: 0, to: plainTexts.count, by: plainTexts.count / 6).map({ plainTexts[$0] }) {
            let report = try CLIRunner.json(Report.self, ["tokenize", "--model", model.path, "--json", "--", corpus[index]])
            XCTAssertEqual(report.ids, expected.ids[index], "corpus[\(index)] \(corpus[index].debugDescription)")
            XCTAssertEqual(report.tokens.count, report.ids.count)
        }
        // Plain output: one `id<TAB>token` line per token.
        let plain = try CLIRunner.run(["tokenize", "--model", model.path, corpus[10]])
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertEqual(plain.stdout.split(separator: "\n").map { Int($0.split(separator: "\t")[0]) }, expected.ids[10].map { $0 })
        // --special parses the chat markers as single tokens.
        let special = try CLIRunner.json(Report.self, ["tokenize", "--model", model.path, "--json", "--special", "--", corpus[200]])
        XCTAssertEqual(special.ids, expected.ids[200])
        XCTAssertEqual(special.tokens.first, "<|endoftext|>")
    }

    func testGenerateJSONOnSmolLM2AnswersLikeTransformers() throws {
        struct Reference: Decodable {
            var system: String
            var question: String
            var promptIds: [Int32]
            var answerIds: [Int32]
            var answer: String
        }
        let model = try CLIModels.smolLM2()
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let expected = try decoder.decode(Reference.self, from: Data(contentsOf: TestPaths.fixtures.appendingPathComponent("reference-logits/smollm2-france.json")))
        let report = try CLIRunner.json(GenerateReport.self, [
            "generate", "--model", model.path, "--cpu", "--temperature", "0", "--max-tokens", "\(expected.answerIds.count + 2)",
            "--system", expected.system, "--json", expected.question])
        XCTAssertEqual(report.promptIds, expected.promptIds)
        XCTAssertEqual(report.ids, expected.answerIds)
        XCTAssertEqual(report.text, expected.answer)
        XCTAssertEqual(report.stopReason, "stop_token")
    }

    func testBenchModelOnTinyPhi35() throws {
        struct ModelRow: Decodable {
            var test: String
            var tokens: Int
            var depth: Int
            var repetitions: Int
            var samples: [Double]
            var tokensPerSecond: Double
            var standardDeviation: Double
        }
        let model = try TestPaths.require(TestPaths.fixtures.appendingPathComponent("tiny-phi3.5-4bit"),
                                          hint: "run python3 Scripts/fixtures/make_tiny_models.py")
        let rows = try CLIRunner.json([ModelRow].self, ["bench", "model", "--model", model.path, "--cpu",
                                                        "-p", "8", "-n", "4", "-d", "6", "-r", "2", "--output", "json"])
        XCTAssertEqual(rows.map(\.test), ["pp8 @ d6", "tg4 @ d6"])
        for row in rows {
            XCTAssertEqual(row.samples.count, 2)
            XCTAssertEqual(row.repetitions, 2)
            XCTAssertEqual(row.depth, 6)
            XCTAssertTrue(row.samples.allSatisfy { $0 > 0 && $0.isFinite })
            XCTAssertEqual(row.tokensPerSecond, row.samples.reduce(0, +) / 2, accuracy: 1e-9 * row.tokensPerSecond)
            XCTAssertEqual(row.standardDeviation, abs(row.samples[0] - row.samples[1]) / 2.squareRoot(),
                           accuracy: 1e-6 * max(row.tokensPerSecond, 1))
        }
        let table = try CLIRunner.run(["bench", "model", "--model", model.path, "--cpu", "-p", "4", "-n", "2", "-r", "1"])
        XCTAssertEqual(table.status, 0, table.stderr)
        let lines = table.stdout.split(separator: "\n")
        XCTAssertEqual(lines.count, 4, table.stdout)
        XCTAssertTrue(lines[0].hasPrefix("| model") && lines[0].hasSuffix("t/s |"), table.stdout)
        XCTAssertTrue(lines[2].contains("| pp4 ") && lines[3].contains("| tg2 "), table.stdout)
    }

    func testBenchKernelsOnTinyPhi35ChecksEveryProduct() throws {
        struct KernelReport: Decodable {
            struct Row: Decodable {
                var name: String
                var shape: String
                var tokens: Int
                var microsecondsPerCall: Double
                var relativeError: Double
            }
            var rows: [Row]
        }
        let model = try TestPaths.require(TestPaths.fixtures.appendingPathComponent("tiny-phi3.5-4bit"),
                                          hint: "run python3 Scripts/fixtures/make_tiny_models.py")

        let kernels = try CLIRunner.json(KernelReport.self, ["bench", "kernels", "--model", model.path, "--cpu",
                                                             "--tokens", "1,3", "--iterations", "2", "--output", "json"])
        XCTAssertEqual(kernels.rows.map(\.tokens), [1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3])
        XCTAssertEqual(kernels.rows.prefix(5).map(\.name), ["qkv", "attention output", "gate·up", "down", "lm head"])
        XCTAssertEqual(kernels.rows.dropFirst(5).map(\.name), ["qkv", "attention", "attention output", "gate·up", "down", "lm head"],
                       "a prompt's attention follows its qkv")
        XCTAssertEqual(kernels.rows[6].shape, "4x16", "heads x head dimension")
        XCTAssertEqual(kernels.rows[0].shape, "192x64")
        XCTAssertEqual(kernels.rows[4].shape, "32064x64")
        XCTAssertTrue(kernels.rows.allSatisfy { $0.relativeError < 1e-3 && $0.microsecondsPerCall > 0 }, "\(kernels.rows)")
    }

    func testBenchTokenizerReportsBothTexts() throws {
        let model = try CLIModels.smolLM2()
        let output = try CLIRunner.run(["bench", "tokenizer", "--model", model.path, "--seconds", "0.05", "--output", "csv"])
        XCTAssertEqual(output.status, 0, output.stderr)
        let lines = output.stdout.split(separator: "\n").map { $0.split(separator: ",").map(String.init) }
        XCTAssertEqual(lines.first, ["text", "bytes", "tokens", "megabytes_per_second"])
        XCTAssertEqual(lines.dropFirst().map { $0[0] }, ["english", "mixed"])
        for line in lines.dropFirst() {
            XCTAssertGreaterThan(Int(line[1]) ?? 0, 999_990)
            XCTAssertLessThanOrEqual(Int(line[1]) ?? .max, 1_000_000)
            XCTAssertGreaterThan(Int(line[2]) ?? 0, 100_000)
            XCTAssertGreaterThan(Double(line[3]) ?? 0, 0)
        }
    }
}
