import ArgumentParser
import Foundation
import PhiEngine
import PhiModel

/// `phi-gpu bench model`: prompt processing (pp) and generation (tg) speed, like llama-bench.
struct BenchModel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "model",
        abstract: "Prompt processing and generation speed of a whole model, like llama-bench.",
        discussion: """
            pp N times one N-token prompt processed as a batch; tg N times N tokens generated one at \
            a time. Each test runs -r times after one untimed warm-up token; the speed is the mean \
            ± the standard deviation of the repetitions. -d fills the KV cache with that many tokens \
            before each timed run. --random needs no download: it synthesizes 4-bit weights of the \
            real shapes in memory.

            Examples:
              phi-gpu bench model --random phi-3.5-mini
              phi-gpu bench model --random phi-4-mini -p 512 -n 128 -d 4096 -r 3
              phi-gpu bench model --model phi-3.5-mini --output csv
            """)

    @OptionGroup(title: "Weights") var weights: BenchWeightsOptions
    @OptionGroup(title: "Backend") var backend: BackendOptions

    @Option(name: [.customShort("p"), .customLong("prompt")], help: "Prompt tokens of the pp test (0 skips it).")
    var promptTokens = 512

    @Option(name: [.customShort("n"), .customLong("generate")], help: "Generated tokens of the tg test (0 skips it).")
    var generationTokens = 128

    @Option(name: [.customShort("d"), .customLong("depth")], help: "Tokens in the KV cache before each timed run.")
    var depth = 0

    @Option(name: [.customShort("r"), .customLong("repetitions")], help: "Timed runs of each test.")
    var repetitions = 5

    @Option(help: "table, json or csv.")
    var output: BenchOutputFormat = .table

    @Flag(help: "After each test, time one more prompt pass or decode step kernel by kernel on the GPU (GPU timestamps).")
    var profile = false

    func validate() throws {
        guard promptTokens >= 0, generationTokens >= 0 else { throw ValidationError("-p and -n must be 0 or more.") }
        guard promptTokens + generationTokens > 0 else { throw ValidationError("-p and -n are both 0: nothing to measure.") }
        guard depth >= 0 else { throw ValidationError("-d must be 0 or more (got \(depth)).") }
        guard repetitions >= 1 else { throw ValidationError("-r must be at least 1 (got \(repetitions)).") }
        let needed = depth + max(promptTokens, generationTokens) + 1
        guard needed <= ModelOptions.largestContext else {
            throw ValidationError("-d plus the larger of -p and -n needs \(needed) positions, more than \(ModelOptions.largestContext).")
        }
    }

    /// One row of the JSON output.
    struct Row: Encodable {
        var model: String
        var sizeBytes: Int
        var backend: String
        var test: String
        var kind: String
        var tokens: Int
        var depth: Int
        var repetitions: Int
        var samples: [Double]
        var tokensPerSecond: Double
        var standardDeviation: Double
        var kernels: [KernelTime]?
        var profiledStepSeconds: Double?
        var stepSeconds: Double?
        var queueSeconds: Double?
    }

    func run() async throws {
        let modelWeights = try await weights.weights()
        guard depth + max(promptTokens, generationTokens) + 1 <= modelWeights.config.maxContext else {
            throw CommandFailure("-d \(depth) with -p/-n exceeds the model's context of \(modelWeights.config.maxContext) tokens")
        }
        let chosen = try ModelLoading.backend(backend)
        let measurements = try ModelBenchmark.run(
            weights: modelWeights, backend: chosen, promptTokens: promptTokens, generationTokens: generationTokens,
            depth: depth, repetitions: repetitions, profile: profile) { step in
            if Console.stderrIsTerminal { Console.err("\r\(step)…\u{1B}[K") }
        }
        if Console.stderrIsTerminal { Console.err("\r\u{1B}[K") }
        let size = ModelBenchmark.weightBytes(modelWeights)
        let rows = measurements.map {
            Row(model: weights.label, sizeBytes: size, backend: chosen.name, test: $0.test, kind: $0.kind, tokens: $0.tokens,
                depth: $0.depth, repetitions: $0.samples.count, samples: $0.samples, tokensPerSecond: $0.mean,
                standardDeviation: $0.standardDeviation, kernels: $0.kernels, profiledStepSeconds: $0.profiledStepSeconds,
                stepSeconds: $0.stepSeconds, queueSeconds: $0.queueSeconds)
        }
        switch output {
        case .json:
            try JSONOutput.print(rows)
        case .csv:
            Console.out(TableText.csv(
                header: ["model", "size_bytes", "backend", "test", "tokens", "depth", "repetitions", "tokens_per_second", "standard_deviation"],
                rows: rows.map { [$0.model, "\($0.sizeBytes)", $0.backend, $0.test, "\($0.tokens)", "\($0.depth)", "\($0.repetitions)",
                                  String(format: "%.3f", $0.tokensPerSecond), String(format: "%.3f", $0.standardDeviation)] }))
        case .table:
            let gib = size >= 1 << 30 ? String(format: "%.2f GiB", Double(size) / Double(1 << 30))
                : String(format: "%.2f MiB", Double(size) / Double(1 << 20))
            Console.out(TableText.markdown(
                header: ["model", "size", "backend", "test", "t/s"],
                rows: rows.map { [$0.model, gib, $0.backend, $0.test,
                                  String(format: "%.2f ± %.2f", $0.tokensPerSecond, $0.standardDeviation)] },
                rightAligned: [1, 4]))
            for row in rows { printProfile(row) }
        }
        if profile, !measurements.contains(where: { $0.kernels != nil }) {
            Console.err("--profile: \(chosen.name) cannot time its kernels (only the GPU backend can)")
        }
    }

    /// The per-kernel GPU times of a profiled prompt pass or decode step, as a table.
    private func printProfile(_ row: Row) {
        guard let kernels = row.kernels, let wall = row.profiledStepSeconds else { return }
        let gpu = kernels.reduce(0) { $0 + $1.seconds }
        let dispatches = kernels.reduce(0) { $0 + $1.dispatches }
        Console.out("\nOne \(row.test) \(row.test.hasPrefix("pp") ? "pass" : "step"), GPU time per kernel (each up to the end of the barrier after it):\n")
        Console.out(TableText.markdown(
            header: ["kernel", "dispatches", "µs", "µs each", "share"],
            rows: kernels.map { [$0.name, "\($0.dispatches)", String(format: "%.1f", $0.seconds * 1e6),
                                 String(format: "%.2f", $0.seconds * 1e6 / Double(max($0.dispatches, 1))),
                                 String(format: "%.1f%%", 100 * $0.seconds / max(gpu, 1e-12))] },
            rightAligned: [1, 2, 3, 4]))
        Console.out(String(format: "GPU %.1f µs in %d dispatches (the profiled step took %.1f µs of wall time)\n",
                           gpu * 1e6, dispatches, wall * 1e6))
        if let step = row.stepSeconds, let queue = row.queueSeconds {
            Console.out(String(format: "A step without profiling: %.1f µs of wall time, %.1f µs of it the host queueing the commands\n",
                               step * 1e6, queue * 1e6))
        }
    }
}
