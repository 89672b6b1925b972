import ArgumentParser
import Foundation
import PhiEngine
import PhiModel

/// `phi-gpu bench`: how fast the kernels, the whole model and the tokenizer are on this machine.
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure the speed of the kernels, the model or the tokenizer.",
        discussion: """
            Examples:
              phi-gpu bench model --random phi-3.5-mini -p 512 -n 128
              phi-gpu bench model --random phi-4-mini -d 4096 -r 3 --output json
              phi-gpu bench kernels --random phi-3.5-mini
              phi-gpu bench tokenizer --model phi-4-mini
            """,
        subcommands: [BenchModel.self, BenchKernels.self, BenchTokenizer.self])
}

/// How a benchmark prints its rows.
enum BenchOutputFormat: String, ExpressibleByArgument, CaseIterable {
    case table, json, csv
}

/// `--random NAME` or `--model NAME`: the weights a benchmark runs (random ones of real shapes by default).
struct BenchWeightsOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Synthesize random weights of this model's shapes in memory: \(ModelBenchmark.presets.map(\.name).joined(separator: " or ")) (the default, phi-3.5-mini, unless --model is given).", valueName: "name"))
    var random: String?

    @Option(name: [.short, .long], help: ArgumentHelp("Benchmark a real checkpoint instead: a registered name, hub id, directory or .gguf file.", valueName: "name"))
    var model: String?

    func validate() throws {
        if random != nil && model != nil { throw ValidationError("Give --random or --model, not both.") }
        if let random, !ModelBenchmark.presets.contains(where: { $0.name == random.lowercased() }) {
            throw ValidationError("--random must be one of \(ModelBenchmark.presets.map(\.name).joined(separator: ", ")) (got '\(random)').")
        }
        if let model { try ModelOptions.validateName(model) }
    }

    /// The name shown in the results.
    var label: String { model ?? "\(random?.lowercased() ?? ModelBenchmark.presets[0].name) (random)" }

    /// The preset's shapes, or nil for a real model.
    var randomConfig: ModelConfig? {
        guard model == nil else { return nil }
        let name = random?.lowercased() ?? ModelBenchmark.presets[0].name
        return ModelBenchmark.presets.first { $0.name == name }?.config
    }

    /// The weights: synthesized (seed 42) or loaded with a progress line.
    func weights() async throws -> ModelWeights {
        if let config = randomConfig {
            Console.note("Synthesizing random weights of \(label)…")
            return RandomWeights.make(config: config, seed: 42)
        }
        let (url, _) = try await ModelLoading.locate(model ?? "", revision: nil)
        let reading = ProgressLine("reading \(url.lastPathComponent)")
        defer { reading.finish() }
        return try CheckpointLoader.load(from: url) { reading.update($0) }.weights
    }
}

/// Renders rows as a Markdown table (the first column left-aligned, numbers right-aligned) or CSV.
enum TableText {
    static func markdown(header: [String], rows: [[String]], rightAligned: Set<Int>) -> String {
        let widths = header.indices.map { column in ([header[column]] + rows.map { $0[column] }).map(\.count).max() ?? 0 }
        func line(_ cells: [String]) -> String {
            "| " + cells.enumerated().map { index, cell in
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                return rightAligned.contains(index) ? padding + cell : cell + padding
            }.joined(separator: " | ") + " |"
        }
        let rule = "| " + widths.enumerated().map { index, width in
            rightAligned.contains(index) ? String(repeating: "-", count: max(width - 1, 1)) + ":" : String(repeating: "-", count: width)
        }.joined(separator: " | ") + " |"
        return ([line(header), rule] + rows.map(line)).joined(separator: "\n") + "\n"
    }

    static func csv(header: [String], rows: [[String]]) -> String {
        func field(_ text: String) -> String {
            text.contains(where: { ",\"\n".contains($0) }) ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
        }
        return ([header] + rows).map { $0.map(field).joined(separator: ",") }.joined(separator: "\n") + "\n"
    }
}
