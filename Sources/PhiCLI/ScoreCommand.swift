import ArgumentParser
import Foundation
import PhiEngine
import PhiModel

/// `phi-gpu score TEXT`: the model's predictions at every position of a text, and its perplexity.
struct ScoreText: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "score",
        abstract: "Show the model's top predictions at each position of a text, and its perplexity.",
        discussion: """
            TEXT is tokenized with the tokenizer's BOS (no chat template); --ids gives the token ids \
            directly instead. For each position: the id, its text, the top-k next ids with their \
            logits, and the log-sum-exp of all logits; then the perplexity of the sequence.

            Examples:
              phi-gpu score "The capital of France is Paris."
              phi-gpu score --ids 1,450,7483,310,3444 --top-k 3 --json
            """)

    @Argument(help: "The text to score (leave out with --ids).")
    var text: String?

    @Option(help: ArgumentHelp("Comma-separated token ids to score instead of TEXT.", valueName: "ids"))
    var ids: String?

    @Option(name: .customLong("top-k"), help: "Top predictions shown per position.")
    var topK: Int = 5

    @Flag(help: "Print one JSON object: ids, per-position top-k and log-sum-exp, perplexity.")
    var json = false

    @OptionGroup(title: "Model") var model: ModelOptions
    @OptionGroup(title: "Backend") var backend: BackendOptions
    @OptionGroup var verbosity: VerboseOption

    func validate() throws {
        switch (text, ids) {
        case (nil, nil): throw ValidationError("Give TEXT to score, or --ids.")
        case (.some, .some): throw ValidationError("Give TEXT or --ids, not both.")
        default: break
        }
        if let ids { _ = try Self.parseIds(ids) }
        if text?.isEmpty == true { throw ValidationError("TEXT is empty; give the text to score.") }
        guard topK >= 1 else { throw ValidationError("--top-k must be at least 1 (got \(topK)).") }
    }

    static func parseIds(_ list: String) throws -> [Int32] {
        let parts = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !parts.isEmpty else { throw ValidationError("--ids needs comma-separated token ids, such as 1,450,7483.") }
        return try parts.map { part in
            guard let id = Int32(part), id >= 0 else {
                throw ValidationError("--ids: '\(part)' is not a token id (a whole number, 0 or more).")
            }
            return id
        }
    }

    /// What `--json` prints.
    struct Report: Encodable {
        struct Position: Encodable {
            var id: Int32
            var topIds: [Int32]
            var topLogits: [Float]
            var logsumexp: Float
        }
        var model: String
        var backend: String
        var ids: [Int32]
        var positions: [Position]
        var perplexity: Double?
    }

    func run() async throws {
        let (engine, _) = try await ModelLoading.engine(model: model, backend: backend, verbose: verbosity.verbose)
        let tokenIds = try ids.map(Self.parseIds) ?? engine.tokenizer.encode(text ?? "", addSpecialTokens: true).map(Int32.init)
        let vocabulary = engine.config.vocabularySize
        if let bad = tokenIds.first(where: { Int($0) >= vocabulary }) {
            throw CommandFailure("token id \(bad) is outside this model's vocabulary of \(vocabulary) ids")
        }
        guard tokenIds.count <= model.ctx else {
            throw CommandFailure("\(tokenIds.count) tokens do not fit the context window of \(model.ctx); raise --ctx or shorten the text")
        }
        let score = try engine.score(ids: tokenIds, topK: topK)
        if json {
            let positions = zip(score.ids, score.positions).map {
                Report.Position(id: $0, topIds: $1.topIds, topLogits: $1.topLogits, logsumexp: $1.logSumExp)
            }
            try JSONOutput.print(Report(model: model.model, backend: engine.backendName, ids: score.ids,
                                        positions: positions, perplexity: score.perplexity))
            return
        }
        let piece = { (id: Int32) in (engine.tokenizer.token(for: Int(id)) ?? "?").debugDescription }
        for (index, (id, position)) in zip(score.ids, score.positions).enumerated() {
            let top = zip(position.topIds, position.topLogits).map { "\(piece($0)) \(String(format: "%.3f", $1))" }
            Console.out("\(index)\t\(id)\t\(piece(id))\tlogsumexp \(String(format: "%.3f", position.logSumExp))\tnext: \(top.joined(separator: ", "))\n")
        }
        Console.out("perplexity: \(score.perplexity.map { String(format: "%.4f", $0) } ?? "n/a (one token)")\n")
    }
}
