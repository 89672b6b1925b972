import Foundation

/// What a generation may do: how many tokens, how they are chosen, where it stops.
public struct GenerationOptions: Sendable {
    /// Most new tokens.
    public var maxTokens: Int = 1024
    public var sampling = SamplingOptions()
    /// Token ids that end the answer: the model's EOS ids plus extra ones (`<|end|>` for Phi).
    public var stopTokens: Set<Int32> = []

    public init(maxTokens: Int = 1024, sampling: SamplingOptions = SamplingOptions(), stopTokens: Set<Int32> = []) {
        self.maxTokens = maxTokens
        self.sampling = sampling
        self.stopTokens = stopTokens
    }
}

/// Why a generation ended.
public enum StopReason: Sendable, Equatable {
    /// The model produced this stop token (not included in the output).
    case stopToken(Int32)
    /// `maxTokens` new tokens were produced.
    case maxTokens
    /// The KV cache is full: the context window (`--ctx`) holds no more tokens.
    case contextFull
    /// The token callback asked to stop.
    case cancelled
}

/// The tokens of one answer and how long they took.
public struct GenerationResult: Sendable {
    /// New tokens, without the stop token.
    public var tokens: [Int32]
    public var stopReason: StopReason
    public var promptTokenCount: Int
    /// Seconds to process the prompt up to the first token's logits.
    public var prefillSeconds: Double
    /// Seconds spent producing the remaining tokens.
    public var decodeSeconds: Double

    /// Prompt tokens per second.
    public var prefillTokensPerSecond: Double { prefillSeconds > 0 ? Double(promptTokenCount) / prefillSeconds : 0 }
    /// Generated tokens per second after the first.
    public var decodeTokensPerSecond: Double {
        decodeSeconds > 0 ? Double(max(tokens.count - 1, 0)) / decodeSeconds : 0
    }
}

/// Errors that stop a generation before it starts.
public enum GenerationError: Error, CustomStringConvertible {
    case emptyPrompt
    case promptTooLong(promptTokens: Int, contextLength: Int)

    public var description: String {
        switch self {
        case .emptyPrompt:
            "the prompt has no tokens; give a prompt or use the chat template"
        case .promptTooLong(let promptTokens, let contextLength):
            "the prompt has \(promptTokens) tokens but the context window holds \(contextLength); shorten the prompt or raise --ctx"
        }
    }
}

/// The generation loop: prefill the prompt, then sample and decode one token at a time.
public enum Generator {
    /// Generates after `prompt` from position 0 of `pass` (which is reset). `onToken` sees each new
    /// token as it comes and returns false to stop.
    public static func generate(pass: ForwardPass, prompt: [Int32], options: GenerationOptions,
                                onToken: (Int32) throws -> Bool = { _ in true }) throws -> GenerationResult {
        guard !prompt.isEmpty else { throw GenerationError.emptyPrompt }
        guard prompt.count < pass.contextLength else {
            throw GenerationError.promptTooLong(promptTokens: prompt.count, contextLength: pass.contextLength)
        }
        pass.reset()
        var sampler = Sampler(options: options.sampling)
        var history = prompt
        var tokens: [Int32] = []
        let clock = ContinuousClock()
        // Plain greedy decoding needs only the argmax of the logits, which the backend finds
        // itself (a GPU sends back the index, not the row); anything else samples them on the host.
        func next(after input: [Int32]) throws -> Int32 {
            if options.sampling.isPlainArgmax { return try pass.greedyNext(tokens: input) }
            return sampler.sample(logits: try pass.forward(tokens: input, logits: .last), history: history)
        }
        let prefillStart = clock.now
        var token = try next(after: prompt)
        let prefillSeconds = seconds(clock.now - prefillStart)
        let decodeStart = clock.now
        var reason = StopReason.maxTokens
        while tokens.count < options.maxTokens {
            if options.stopTokens.contains(token) { reason = .stopToken(token); break }
            tokens.append(token)
            history.append(token)
            if try !onToken(token) { reason = .cancelled; break }
            if tokens.count == options.maxTokens { break }
            if pass.position >= pass.contextLength { reason = .contextFull; break }
            token = try next(after: [token])
        }
        return GenerationResult(tokens: tokens, stopReason: reason, promptTokenCount: prompt.count,
                                prefillSeconds: prefillSeconds, decodeSeconds: seconds(clock.now - decodeStart))
    }

    /// A duration in seconds.
    public static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}
