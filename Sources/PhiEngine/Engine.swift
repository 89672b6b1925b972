import Foundation
import PhiCPU
import PhiFormats
import PhiModel
import PhiTokenizer

/// A loaded model ready to answer: checkpoint, tokenizer, chat template, backend and KV cache.
///
/// `generate` runs one chat turn (or a raw prompt) and streams text; `score` returns the logits
/// of every position of a sequence. One sequence at a time: each call starts from position 0.
public final class Engine {
    /// Which backend runs the model.
    public enum BackendChoice {
        /// SIMD on all cores (or `threads`).
        case cpu(threads: Int? = nil)
        /// A backend made by the caller (the GPU backend).
        case custom(any InferenceBackend)
    }

    /// The system prompt used when none is given.
    public static let defaultSystemPrompt = "You are a helpful assistant."

    public let checkpoint: Checkpoint
    public let tokenizer: Tokenizer
    /// Nil when the checkpoint carries no recognised template (only `raw` prompts then).
    public let chatTemplate: ChatTemplate?
    /// The model's EOS ids plus the template's end-of-turn token (`<|end|>` for Phi).
    public let stopTokens: Set<Int32>
    public let forwardPass: ForwardPass

    public var config: ModelConfig { checkpoint.weights.config }
    public var backendName: String { forwardPass.backend.name }

    /// Loads `model` (an MLX directory or a GGUF file) with a context window of `contextLength`
    /// tokens (at most the model's `maxContext`).
    public init(model: URL, contextLength: Int = 4096, backend: BackendChoice = .cpu(),
                chatFormat: ChatFormat? = nil, progress: ((Double) -> Void)? = nil) throws {
        let checkpoint = try CheckpointLoader.load(from: model, progress: progress)
        let tokenizer: Tokenizer
        switch checkpoint.source {
        case .gguf(let file): tokenizer = try Tokenizer(gguf: file)
        case .mlxDirectory(let directory): tokenizer = try Tokenizer.load(directory: directory)
        }
        let config = checkpoint.weights.config
        guard contextLength > 0, contextLength <= config.maxContext else {
            throw EngineError.contextOutOfRange(requested: contextLength, maximum: config.maxContext, model: model.path)
        }
        let template = chatFormat != nil || tokenizer.chatTemplateText != nil
            ? try ChatTemplate(tokenizer: tokenizer, format: chatFormat) : nil
        var stops = Set(checkpoint.eosTokenIds.map(Int32.init))
        if let template, let end = tokenizer.tokenId(for: template.endOfTurnToken) { stops.insert(Int32(end)) }
        let chosen: any InferenceBackend
        switch backend {
        case .cpu(let threads): chosen = threads.map { CPUBackend(threads: $0) } ?? CPUBackend()
        case .custom(let custom): chosen = custom
        }
        self.checkpoint = checkpoint
        self.tokenizer = tokenizer
        self.chatTemplate = template
        self.stopTokens = stops
        self.forwardPass = try ForwardPass(weights: checkpoint.weights, backend: chosen, contextLength: contextLength)
    }

    /// The prompt ids for `prompt`: through the chat template with `system` unless `raw`.
    public func promptIds(prompt: String, system: String? = Engine.defaultSystemPrompt, raw: Bool = false) throws -> [Int32] {
        if raw { return tokenizer.encode(prompt, addSpecialTokens: true).map(Int32.init) }
        guard let chatTemplate else { throw EngineError.noChatTemplate }
        var messages: [ChatMessage] = []
        if let system, !system.isEmpty { messages.append(ChatMessage(role: "system", content: system)) }
        messages.append(ChatMessage(role: "user", content: prompt))
        let text = try chatTemplate.render(messages: messages, addGenerationPrompt: true)
        return tokenizer.encode(text, addSpecialTokens: false, parseSpecial: true).map(Int32.init)
    }

    /// One answer to `prompt`; `onText` receives the text of each token as it completes.
    /// `options.stopTokens` are added to the engine's own stop tokens.
    public func generate(prompt: String, system: String? = Engine.defaultSystemPrompt, raw: Bool = false,
                         options: GenerationOptions = GenerationOptions(),
                         onText: (String) throws -> Void = { _ in }) throws -> Answer {
        let ids = try promptIds(prompt: prompt, system: system, raw: raw)
        var options = options
        options.stopTokens.formUnion(stopTokens)
        var detokenizer = StreamingDetokenizer(tokenizer: tokenizer, skipSpecialTokens: true)
        var text = ""
        let result = try Generator.generate(pass: forwardPass, prompt: ids, options: options) { token in
            let piece = detokenizer.append(Int(token))
            text += piece
            if !piece.isEmpty { try onText(piece) }
            return true
        }
        let rest = detokenizer.finish()
        text += rest
        if !rest.isEmpty { try onText(rest) }
        return Answer(promptIds: ids, result: result, text: text)
    }

    /// Logits of every position of `ids` (from position 0): top-k, log-sum-exp, and the
    /// perplexity of the sequence (each next token's log-probability under the previous position).
    public func score(ids: [Int32], topK: Int = 5) throws -> Score {
        guard !ids.isEmpty else { throw GenerationError.emptyPrompt }
        forwardPass.reset()
        let logits = try forwardPass.forward(tokens: ids, logits: .all)  // (ids, vocabulary)
        return Score(ids: ids, logits: logits, vocabularySize: config.vocabularySize, topK: topK)
    }

    /// `score(ids:)` of `text` tokenized with the tokenizer's special tokens (BOS) added.
    public func score(text: String, topK: Int = 5) throws -> Score {
        try score(ids: tokenizer.encode(text, addSpecialTokens: true).map(Int32.init), topK: topK)
    }
}

/// One generated answer.
public struct Answer: Sendable {
    public var promptIds: [Int32]
    /// New token ids, timings and why it stopped.
    public var result: GenerationResult
    /// The decoded answer, special tokens skipped.
    public var text: String
}

/// Errors of the engine's own checks.
public enum EngineError: Error, CustomStringConvertible {
    case contextOutOfRange(requested: Int, maximum: Int, model: String)
    case noChatTemplate

    public var description: String {
        switch self {
        case .contextOutOfRange(let requested, let maximum, let model):
            "context of \(requested) tokens is outside 1...\(maximum), the most \(model) supports; pick a --ctx in that range"
        case .noChatTemplate:
            "the model's tokenizer has no chat template phi-gpu knows; use --raw or name a chat format"
        }
    }
}
