import Foundation
import PhiModel

/// The interactive side of `phi-gpu chat`: prompt with line editing, streamed answers, Ctrl-C
/// handling, slash commands and a speed line after each answer.
struct ChatTerminal {
    let session: ChatSession
    let options: GenerationOptions
    let modelName: String

    func run() {
        let monitor = InterruptMonitor()
        monitor.install()
        defer { monitor.uninstall() }
        let editor = LineEditor()
        let worker = AnswerWorker()
        Console.note("phi-gpu chat: \(modelName) on \(session.engine.backendName), context \(session.engine.forwardPass.contextLength) tokens.")
        Console.note("Type /help for commands; Ctrl-C stops an answer, Ctrl-C twice or /quit exits.")
        var interruptedAtPrompt = false
        while true {
            switch editor.readLine(prompt: "> ") {
            case .endOfInput:
                return
            case .interrupted:
                if interruptedAtPrompt { return }
                interruptedAtPrompt = true
                Console.note("(Ctrl-C again, Ctrl-D or /quit to exit)")
            case .line(let line):
                interruptedAtPrompt = false
                let text = line.trimmingCharacters(in: .whitespaces)
                if text.isEmpty { continue }
                if text.hasPrefix("/") {
                    let command = ChatCommandLine(text)
                    if command == .quit { return }
                    worker.waitUntilIdle()
                    if let reply = command.apply(to: session) { Console.out(reply + "\n") }
                    continue
                }
                answer(text, monitor: monitor, worker: worker)
            }
        }
    }

    /// Streams the answer to `text` from a worker thread. Ctrl-C mutes the worker and returns to
    /// the prompt at once; the worker stops after the token in progress (the next command waits for it).
    private func answer(_ text: String, monitor: InterruptMonitor, worker: AnswerWorker) {
        worker.waitUntilIdle()
        monitor.clear()
        let session = session, options = options
        worker.start { output in
            do {
                let stats = try session.reply(to: text, options: options, shouldStop: { monitor.isSet },
                                              onNotice: { output.write(Self.dim("[\($0)]") + "\n") },
                                              onText: { output.write($0) })
                output.write("\n")
                switch stats.stopReason {
                case .stopToken: break
                case .cancelled: output.write(Self.dim("[stopped]") + "\n")
                case .contextFull: output.write(Self.dim("[the context window is full; /reset or a larger --ctx]") + "\n")
                case .maxTokens: output.write(Self.dim("[--max-tokens reached]") + "\n")
                }
                output.write(Self.dim(Self.statsLine(stats)) + "\n")
            } catch {
                output.write("\n")
                output.writeError("Error: \(error)\n")
            }
        }
        if worker.waitUntilDone(orInterrupted: monitor) == .interrupted {
            Console.out("\n" + Self.dim("[stopped]") + "\n")
        }
    }

    /// `[prompt 27 tokens (12 cached) 310.5 t/s | answer 40 tokens 24.3 t/s]`
    static func statsLine(_ stats: ChatSession.TurnStats) -> String {
        "[prompt \(stats.promptTokens) tokens (\(stats.reusedTokens) cached) "
            + String(format: "%.1f", stats.promptTokensPerSecond) + " t/s | answer \(stats.generatedTokens) tokens "
            + String(format: "%.1f", stats.generationTokensPerSecond) + " t/s]"
    }

    static func dim(_ text: String) -> String {
        Console.stdoutIsTerminal ? "\u{1B}[2m" + text + "\u{1B}[0m" : text
    }
}
