import Foundation
import PhiEngine
import PhiModel
import PhiTokenizer

/// A conversation with the model. Each turn re-renders the whole conversation with the chat
/// template; when the KV cache already holds a prefix of the rendered ids, only the new suffix is
/// processed. When the conversation outgrows the context window, the oldest exchanges are dropped.
/// Used by one thread at a time (the terminal waits for its answer worker before touching it).
final class ChatSession: @unchecked Sendable {
    /// One user question and the model's answer.
    struct Exchange {
        var user: String
        var assistant: String
    }

    /// What one answer cost.
    struct TurnStats {
        /// Tokens of the rendered conversation sent to the model this turn.
        var promptTokens = 0
        /// Of those, tokens whose keys and values were already in the KV cache.
        var reusedTokens = 0
        var promptSeconds = 0.0
        var generatedTokens = 0
        var decodeSeconds = 0.0
        var stopReason = StopReason.maxTokens
        /// Exchanges dropped to make room.
        var droppedExchanges = 0

        /// New prompt tokens processed per second.
        var promptTokensPerSecond: Double {
            promptSeconds > 0 ? Double(promptTokens - reusedTokens) / promptSeconds : 0
        }
        /// Generated tokens per second after the first.
        var generationTokensPerSecond: Double {
            decodeSeconds > 0 ? Double(max(generatedTokens - 1, 0)) / decodeSeconds : 0
        }
    }

    let engine: Engine
    var system: String?
    private(set) var exchanges: [Exchange] = []
    /// The ids whose keys and values are in the KV cache, in order: (engine.forwardPass.position).
    private(set) var cachedIds: [Int32] = []
    private(set) var last: TurnStats?
    private(set) var totalGenerated = 0

    init(engine: Engine, system: String?) {
        self.engine = engine
        self.system = system
    }

    /// Forgets the conversation (the system prompt stays).
    func reset() {
        exchanges.removeAll()
        cachedIds.removeAll()
        engine.forwardPass.reset()
    }

    /// The prompt ids of the conversation so far plus `user`, ending with the assistant's header.
    func promptIds(exchanges: [Exchange], user: String) throws -> [Int32] {
        guard let template = engine.chatTemplate else { throw EngineError.noChatTemplate }
        var messages: [ChatMessage] = []
        if let system, !system.isEmpty { messages.append(ChatMessage(role: "system", content: system)) }
        for exchange in exchanges {
            messages.append(ChatMessage(role: "user", content: exchange.user))
            messages.append(ChatMessage(role: "assistant", content: exchange.assistant))
        }
        messages.append(ChatMessage(role: "user", content: user))
        let text = try template.render(messages: messages, addGenerationPrompt: true)
        return engine.tokenizer.encode(text, addSpecialTokens: false, parseSpecial: true).map(Int32.init)
    }

    /// Answers `user`, streaming the text to `onText`. `shouldStop` is checked between tokens
    /// (Ctrl-C); a stopped answer is kept in the conversation as far as it got. `onNotice` hears
    /// about dropped exchanges.
    func reply(to user: String, options: GenerationOptions, shouldStop: () -> Bool,
               onNotice: (String) -> Void, onText: (String) -> Void) throws -> TurnStats {
        let pass = engine.forwardPass
        let contextLength = pass.contextLength
        // Room for the answer: the answer's budget, but at most a quarter of the window.
        let reserve = min(options.maxTokens, max(contextLength / 4, 1))
        var stats = TurnStats()
        var ids = try promptIds(exchanges: exchanges, user: user)
        while ids.count + reserve > contextLength && !exchanges.isEmpty {
            exchanges.removeFirst()
            stats.droppedExchanges += 1
            ids = try promptIds(exchanges: exchanges, user: user)
        }
        if stats.droppedExchanges > 0 {
            onNotice("context full: dropped the \(stats.droppedExchanges == 1 ? "oldest exchange" : "\(stats.droppedExchanges) oldest exchanges") to make room (--ctx \(contextLength))")
        }
        guard ids.count < contextLength else {
            throw GenerationError.promptTooLong(promptTokens: ids.count, contextLength: contextLength)
        }

        // Reuse the cache when it holds a prefix of the new ids; otherwise start over.
        var suffixStart = 0
        if cachedIds.count < ids.count, ids.starts(with: cachedIds), pass.position == cachedIds.count {
            suffixStart = cachedIds.count
        } else {
            pass.reset()
            cachedIds.removeAll()
        }
        stats.promptTokens = ids.count
        stats.reusedTokens = suffixStart

        var stops = options.stopTokens
        stops.formUnion(engine.stopTokens)
        var sampler = Sampler(options: options.sampling)
        var history = ids
        var detokenizer = StreamingDetokenizer(tokenizer: engine.tokenizer, skipSpecialTokens: true)
        var answer = ""
        let clock = ContinuousClock()
        let promptStart = clock.now
        let suffix = Array(ids[suffixStart...])
        var logits = try pass.forward(tokens: suffix, logits: .last)  // (vocabularySize)
        cachedIds += suffix
        stats.promptSeconds = Generator.seconds(clock.now - promptStart)
        let decodeStart = clock.now
        var generated = 0
        stats.stopReason = .maxTokens
        while generated < options.maxTokens {
            if shouldStop() { stats.stopReason = .cancelled; break }
            let token = sampler.sample(logits: logits, history: history)
            if stops.contains(token) { stats.stopReason = .stopToken(token); break }
            generated += 1
            history.append(token)
            let piece = detokenizer.append(Int(token))
            if !piece.isEmpty {
                answer += piece
                onText(piece)
            }
            if generated == options.maxTokens { break }
            if shouldStop() { stats.stopReason = .cancelled; break }
            if pass.position >= contextLength { stats.stopReason = .contextFull; break }
            logits = try pass.forward(tokens: [token], logits: .last)
            cachedIds.append(token)
        }
        let rest = detokenizer.finish()
        if !rest.isEmpty {
            answer += rest
            onText(rest)
        }
        stats.decodeSeconds = Generator.seconds(clock.now - decodeStart)
        stats.generatedTokens = generated
        exchanges.append(Exchange(user: user, assistant: answer))
        totalGenerated += generated
        last = stats
        return stats
    }
}
