import ArgumentParser
import Foundation
import PhiCPU
import PhiEngine
import PhiGPU
import PhiModel

/// `phi-gpu bench kernels`: each product of one layer and the LM head at the model's shapes.
struct BenchKernels: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kernels",
        abstract: "Time each matrix product of a model's layer, and a prompt's attention, at real shapes, checked first.",
        discussion: """
            For 1 token (decode: matrix × vector) and for a prompt batch (matrix × matrix), each \
            product's output is compared with the CPU reference before it is timed; for a prompt, so \
            is its causal attention (from position 0, on a sample of its queries). Reported: time \
            per call, effective GB/s (weights, inputs and outputs moved; for attention the cached \
            keys and values once), the percentage of the streaming-read bandwidth measured in the \
            same run (GPU or CPU; not for attention), and TFLOP/s.

            Examples:
              phi-gpu bench kernels
              phi-gpu bench kernels --random phi-4-mini --tokens 1,128,512 --output json
              phi-gpu bench kernels --cpu --iterations 20
            """)

    @OptionGroup(title: "Weights") var weights: BenchWeightsOptions
    @OptionGroup(title: "Backend") var backend: BackendOptions

    @Option(help: ArgumentHelp("Comma-separated token counts to time.", valueName: "list"))
    var tokens = "1,512"

    @Option(help: "Timed calls per product (default: 200 for 1 token, 10 for more).")
    var iterations: Int?

    @Option(help: "table, json or csv.")
    var output: BenchOutputFormat = .table

    func validate() throws {
        _ = try tokenCounts()
        if let iterations, iterations < 1 { throw ValidationError("--iterations must be at least 1 (got \(iterations)).") }
    }

    func tokenCounts() throws -> [Int] {
        let counts = tokens.split(separator: ",").map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard !counts.isEmpty, counts.allSatisfy({ ($0 ?? 0) >= 1 && ($0 ?? 0) <= 8192 }) else {
            throw ValidationError("--tokens must be comma-separated counts between 1 and 8192, such as 1,512 (got '\(tokens)').")
        }
        return counts.compactMap { $0 }
    }

    /// What `--output json` prints.
    struct Report: Encodable {
        var model: String
        var backend: String
        var bandwidthGigabytesPerSecond: Double?
        var rows: [KernelBenchmark.Row]
    }

    func run() async throws {
        let config: ModelConfig
        if let preset = weights.randomConfig {
            config = preset
        } else {
            config = try await weights.weights().config
        }
        let chosen = try ModelLoading.backend(backend)
        var bandwidth: Double?
        if let context = (chosen as? GPUBackend)?.context {
            bandwidth = try GPUBandwidth.measure(context: context, byteCount: 256 << 20)
        } else if let cpu = chosen as? CPUBackend {
            bandwidth = CPUBandwidth.measure(threads: cpu.threads)
        }
        let counts = try tokenCounts()
        let rows = try KernelBenchmark.run(config: config, backend: chosen, tokensList: counts, bandwidth: bandwidth,
                                           iterations: { iterations ?? ($0 == 1 ? 200 : 10) })
        switch output {
        case .json:
            try JSONOutput.print(Report(model: weights.label, backend: chosen.name,
                                        bandwidthGigabytesPerSecond: bandwidth.map { $0 / 1e9 }, rows: rows))
        case .csv:
            Console.out(TableText.csv(
                header: ["kernel", "shape", "tokens", "microseconds_per_call", "gigabytes_per_second", "percent_of_bandwidth", "teraflops", "relative_error"],
                rows: rows.map { [$0.name, $0.shape, "\($0.tokens)", String(format: "%.2f", $0.microsecondsPerCall),
                                  String(format: "%.2f", $0.gigabytesPerSecond), $0.percentOfBandwidth.map { String(format: "%.1f", $0) } ?? "",
                                  String(format: "%.4f", $0.teraflops), String(format: "%.2e", $0.relativeError)] }))
        case .table:
            Console.out("\(weights.label) on \(chosen.name)")
            Console.out(bandwidth.map { String(format: ", streaming read %.1f GB/s\n", $0 / 1e9) } ?? "\n")
            Console.out(TableText.markdown(
                header: ["kernel", "shape", "tokens", "µs/call", "GB/s", "% of bw", "TFLOP/s", "rel. error"],
                rows: rows.map { [$0.name, $0.shape, "\($0.tokens)", String(format: "%.1f", $0.microsecondsPerCall),
                                  String(format: "%.1f", $0.gigabytesPerSecond), $0.percentOfBandwidth.map { String(format: "%.0f%%", $0) } ?? "-",
                                  String(format: "%.3f", $0.teraflops), String(format: "%.1e", $0.relativeError)] },
                rightAligned: [2, 3, 4, 5, 6, 7]))
            if let context = (chosen as? GPUBackend)?.context {
                try printReadCeilings(context: context, rows: rows.filter { $0.tokens == 1 })
            }
        }
    }

    /// What a bare streaming read of each decode product's bytes takes, with a dispatch and barrier
    /// each like the products: how close a product of that size can get to the bandwidth.
    private func printReadCeilings(context: GPUContext, rows: [KernelBenchmark.Row]) throws {
        guard !rows.isEmpty else { return }
        Console.out("\nStreaming reads of each decode product's bytes, one dispatch and barrier each:\n")
        var table: [[String]] = []
        for row in rows {
            let bytes = row.gigabytesPerSecond * 1e9 * row.microsecondsPerCall * 1e-6
            let seconds = try GPUBandwidth.secondsPerRead(context: context, byteCount: Int(bytes))
            table.append([row.name, String(format: "%.1f MB", bytes / 1e6), String(format: "%.1f", seconds * 1e6),
                          String(format: "%.1f", bytes / seconds / 1e9),
                          String(format: "%.0f%%", 100 * seconds / (row.microsecondsPerCall * 1e-6))])
        }
        Console.out(TableText.markdown(header: ["bytes of", "size", "µs/read", "GB/s", "product at % of it"], rows: table,
                                       rightAligned: [1, 2, 3, 4]))
    }
}
