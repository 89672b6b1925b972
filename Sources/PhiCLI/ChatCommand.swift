import ArgumentParser
import Foundation
import PhiEngine
import PhiModel

/// `phi-gpu chat`: a conversation in the terminal, or answers to one question per line of stdin.
struct Chat: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Chat with a model in the terminal (the default command).",
        discussion: """
            Answers stream as they are generated; the whole conversation is kept and sent again \
            each turn, reusing the work already done for it. When the context window fills, the \
            oldest exchanges are dropped. Ctrl-C stops an answer; Ctrl-C twice at the prompt, \
            Ctrl-D or /quit exits.

            Commands at the prompt:
              /help          list these commands
              /reset         forget the conversation
              /system TEXT   set the system prompt (/system alone shows it)
              /stats         tokens in the context, speeds of the last answer
              /quit          exit

            When standard input is not a terminal, each line is one user turn and only the answers \
            are written, one after another, for scripts.

            Examples:
              phi-gpu chat
              phi-gpu chat --model phi-4-mini --temperature 0.2
              phi-gpu chat --model .models/SmolLM2-135M-Instruct.Q4_1.gguf --cpu
              printf 'Hi!\\nWhat is 2+2?\\n' | phi-gpu chat --temperature 0
            """)

    @OptionGroup(title: "Model") var model: ModelOptions
    @OptionGroup(title: "Backend") var backend: BackendOptions
    @OptionGroup(title: "Sampling") var sampling: SamplingFlags

    @Option(help: "The system prompt; an empty one sends none.")
    var system: String = Engine.defaultSystemPrompt

    @OptionGroup var verbosity: VerboseOption

    func run() async throws {
        let (engine, extraStops) = try await ModelLoading.engine(model: model, backend: backend, verbose: verbosity.verbose)
        guard engine.chatTemplate != nil else { throw EngineError.noChatTemplate }
        let options = try sampling.generationOptions(tokenizer: engine.tokenizer, extraStopStrings: extraStops)
        if verbosity.verbose { Console.note("Sampling seed \(sampling.effectiveSeed).") }
        let session = ChatSession(engine: engine, system: system)
        if Console.stdinIsTerminal {
            ChatTerminal(session: session, options: options, modelName: model.model).run()
        } else {
            try answerPiped(session: session, options: options)
        }
    }

    /// One user turn per line of standard input; only the answers on standard output.
    private func answerPiped(session: ChatSession, options: GenerationOptions) throws {
        while let line = readLine() {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { continue }
            if text.hasPrefix("/") {
                let command = ChatCommandLine(text)
                if command == .quit { return }
                if let reply = command.apply(to: session) { Console.note(reply) }
                continue
            }
            let stats = try session.reply(to: text, options: options, shouldStop: { false },
                                          onNotice: { Console.note("phi-gpu: \($0)") }, onText: { Console.out($0) })
            Console.out("\n")
            if verbosity.verbose { Console.note(ChatTerminal.statsLine(stats)) }
        }
    }
}

/// A slash command typed at the chat prompt.
enum ChatCommandLine: Equatable {
    case help, reset, quit, stats
    case system(String?)
    case unknown(String)

    init(_ text: String) {
        let parts = text.split(separator: " ", maxSplits: 1)
        let name = parts.first.map(String.init) ?? ""
        let argument = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : nil
        switch name {
        case "/help", "/?": self = .help
        case "/reset", "/clear": self = .reset
        case "/quit", "/exit", "/bye": self = .quit
        case "/stats": self = .stats
        case "/system": self = .system(argument)
        default: self = .unknown(name)
        }
    }

    static let helpText = """
        /help          list these commands
        /reset         forget the conversation
        /system TEXT   set the system prompt (/system alone shows it)
        /stats         tokens in the context, speeds of the last answer
        /quit          exit (also Ctrl-D, or Ctrl-C twice)
        """

    /// Carries out the command on `session` and returns what to show (nil for `quit`).
    func apply(to session: ChatSession) -> String? {
        switch self {
        case .help: return Self.helpText
        case .reset:
            session.reset()
            return "Conversation cleared."
        case .quit: return nil
        case .system(let text?):
            session.system = text
            return "System prompt set; it applies from the next answer."
        case .system(nil):
            return "System prompt: \(session.system.map { $0.isEmpty ? "(none)" : $0 } ?? "(none)")"
        case .stats: return Self.statsText(session)
        case .unknown(let name): return "Unknown command \(name); /help lists the commands."
        }
    }

    static func statsText(_ session: ChatSession) -> String {
        let engine = session.engine
        var lines = [
            "model: \(engine.config.architecture.rawValue), \(engine.config.layerCount) layers, on \(engine.backendName)",
            "context: \(session.cachedIds.count) of \(engine.forwardPass.contextLength) tokens in the KV cache, \(session.exchanges.count) exchanges kept",
            "generated this session: \(session.totalGenerated) tokens",
        ]
        if let last = session.last {
            lines.append("last answer: prompt \(last.promptTokens) tokens (\(last.reusedTokens) reused from the cache) at "
                + String(format: "%.1f", last.promptTokensPerSecond) + " t/s, answer \(last.generatedTokens) tokens at "
                + String(format: "%.1f", last.generationTokensPerSecond) + " t/s")
        }
        return lines.joined(separator: "\n")
    }
}
