import ArgumentParser
import Foundation
import PhiModel
import PhiTokenizer

/// The sampling and stopping flags of `chat` and `generate`, turned into `GenerationOptions`.
struct SamplingFlags: ParsableArguments {
    @Option(help: "Sampling temperature; 0 always picks the most likely token (greedy).")
    var temperature: Float = 0.6

    @Option(name: .customLong("top-p"), help: "Keep the most likely tokens whose probabilities add up to this (nucleus sampling); 1 keeps all.")
    var topP: Float = 1

    @Option(name: .customLong("top-k"), help: "Keep only the K most likely tokens; 0 keeps all.")
    var topK: Int = 0

    @Option(name: .customLong("min-p"), help: "Drop tokens less likely than this fraction of the most likely one; 0 keeps all.")
    var minP: Float = 0

    @Option(name: .customLong("repetition-penalty"), help: "Penalise the last 64 tokens' ids by this factor; 1 is off.")
    var repetitionPenalty: Float = 1

    @Option(help: "Random seed, for repeatable sampling (default: a new one each run).")
    var seed: UInt64?

    @Option(name: .customLong("max-tokens"), help: "The most tokens one answer may have.")
    var maxTokens: Int = 1024

    @Option(name: .customLong("extra-eos"), help: ArgumentHelp("A further token that ends an answer, such as '<|end|>' (repeatable); it must be one token of the model's vocabulary.", valueName: "token"))
    var extraEOS: [String] = []

    func validate() throws {
        guard temperature.isFinite, temperature >= 0 else {
            throw ValidationError("--temperature must be 0 or more (got \(temperature)).")
        }
        guard topP.isFinite, topP > 0, topP <= 1 else {
            throw ValidationError("--top-p must be in (0, 1] (got \(topP)).")
        }
        guard topK >= 0 else { throw ValidationError("--top-k must be 0 (off) or more (got \(topK)).") }
        guard minP.isFinite, minP >= 0, minP < 1 else {
            throw ValidationError("--min-p must be in [0, 1) (got \(minP)).")
        }
        guard repetitionPenalty.isFinite, repetitionPenalty > 0 else {
            throw ValidationError("--repetition-penalty must be more than 0 (got \(repetitionPenalty)); 1 is off.")
        }
        guard maxTokens >= 1 else { throw ValidationError("--max-tokens must be at least 1 (got \(maxTokens)).") }
        if let empty = extraEOS.first(where: \.isEmpty) {
            throw ValidationError("--extra-eos needs a token such as '<|end|>' (got '\(empty)').")
        }
    }

    /// The seed used: `--seed`, or one drawn once per run.
    var effectiveSeed: UInt64 { seed ?? Self.runSeed }
    private static let runSeed = UInt64.random(in: 0...UInt64(UInt32.max))

    /// The options for the generation loop. `extraStopStrings` (the registry's, e.g. `<|end|>`) and
    /// `--extra-eos` become stop token ids; an `--extra-eos` that is not one token is an error.
    func generationOptions(tokenizer: Tokenizer, extraStopStrings: [String]) throws -> GenerationOptions {
        var stops: Set<Int32> = []
        for text in extraStopStrings {
            if let id = tokenizer.tokenId(for: text) { stops.insert(Int32(id)) }
        }
        for text in extraEOS {
            guard let id = tokenizer.tokenId(for: text) else {
                throw CommandFailure("--extra-eos '\(text)' is not a single token of this model's vocabulary; give a token such as '\(tokenizer.eosToken ?? "<|end|>")'")
            }
            stops.insert(Int32(id))
        }
        let sampling = SamplingOptions(temperature: temperature, topK: topK, topP: topP, minP: minP,
                                       repetitionPenalty: repetitionPenalty, seed: effectiveSeed)
        return GenerationOptions(maxTokens: maxTokens, sampling: sampling, stopTokens: stops)
    }
}

/// A failure reported to the user as one line (`Error: …`) with exit status 1.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
