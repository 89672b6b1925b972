import ArgumentParser
import Foundation
import PhiEngine
import PhiModel

/// `phi-gpu generate PROMPT`: one answer, streamed as text or reported as JSON.
struct Generate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Answer one prompt and exit.",
        discussion: """
            The prompt goes through the model's chat template with the system prompt, unless \
            --raw sends it as it is. PROMPT '-' reads it from standard input. --json prints the \
            prompt and answer ids, the text and the timings as one JSON object instead of \
            streaming the text.

            Examples:
              phi-gpu generate "Write a haiku about GPUs."
              phi-gpu generate --model phi-4-mini --temperature 0 --max-tokens 64 "2+2="
              phi-gpu generate --json --temperature 0 --seed 1 "What is the capital of France?"
              phi-gpu generate --raw "Once upon a time"
            """)

    @Argument(help: "The prompt ('-' reads standard input).")
    var prompt: String

    @OptionGroup(title: "Model") var model: ModelOptions
    @OptionGroup(title: "Backend") var backend: BackendOptions
    @OptionGroup(title: "Sampling") var sampling: SamplingFlags

    @Option(help: "The system prompt; an empty one sends none.")
    var system: String = Engine.defaultSystemPrompt

    @Flag(help: "Send the prompt without the chat template (the tokenizer's BOS is added).")
    var raw = false

    @Flag(help: "Print one JSON object: ids, text, stop reason, timings.")
    var json = false

    @OptionGroup var verbosity: VerboseOption

    func validate() throws {
        if prompt.isEmpty { throw ValidationError("The prompt is empty; give the text to answer, or '-' to read it from standard input.") }
    }

    /// What `--json` prints.
    struct Report: Encodable {
        var model: String
        var backend: String
        var seed: UInt64
        var promptIds: [Int32]
        var ids: [Int32]
        var text: String
        var stopReason: String
        var promptTokens: Int
        var generatedTokens: Int
        var promptSeconds: Double
        var generationSeconds: Double
        var promptTokensPerSecond: Double
        var generationTokensPerSecond: Double
    }

    func run() async throws {
        var text = prompt
        if prompt == "-" {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            guard !text.isEmpty else { throw CommandFailure("standard input was empty; give the prompt there or as an argument") }
        }
        let (engine, extraStops) = try await ModelLoading.engine(model: model, backend: backend, verbose: verbosity.verbose)
        let options = try sampling.generationOptions(tokenizer: engine.tokenizer, extraStopStrings: extraStops)
        let answer = try engine.generate(prompt: text, system: system.isEmpty ? nil : system, raw: raw,
                                         options: options) { piece in
            if !json { Console.out(piece) }
        }
        let result = answer.result
        if json {
            try JSONOutput.print(Report(
                model: model.model, backend: engine.backendName, seed: sampling.effectiveSeed, promptIds: answer.promptIds,
                ids: result.tokens, text: answer.text, stopReason: Self.name(result.stopReason),
                promptTokens: result.promptTokenCount, generatedTokens: result.tokens.count,
                promptSeconds: result.prefillSeconds, generationSeconds: result.decodeSeconds,
                promptTokensPerSecond: result.prefillTokensPerSecond,
                generationTokensPerSecond: result.decodeTokensPerSecond))
        } else {
            Console.out("\n")
            if verbosity.verbose {
                Console.note("prompt \(result.promptTokenCount) tokens " + String(format: "%.1f", result.prefillTokensPerSecond)
                    + " t/s, answer \(result.tokens.count) tokens " + String(format: "%.1f", result.decodeTokensPerSecond)
                    + " t/s, stopped: \(Self.name(result.stopReason)), seed \(sampling.effectiveSeed)")
            }
        }
    }

    static func name(_ reason: StopReason) -> String {
        switch reason {
        case .stopToken: "stop_token"
        case .maxTokens: "max_tokens"
        case .contextFull: "context_full"
        case .cancelled: "cancelled"
        }
    }
}
