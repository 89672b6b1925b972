import Foundation
import TestSupport
import XCTest

/// `phi-gpu chat` in a real terminal (tmux), and with standard input from a pipe.
final class ChatTerminalTests: XCTestCase {
    /// A tmux session running one command, read through `capture-pane`.
    final class TmuxSession {
        let name = "phi-gpu-test-\(UUID().uuidString.prefix(8))"

        init(command: [String]) throws {
            guard let tmux = Self.tmuxPath else {
                throw MissingTestData(description: "tmux is not installed: run Scripts/setup.sh (apt-get install tmux)")
            }
            self.tmux = tmux
            let line = command.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
            // `remain-on-exit` keeps the pane (and its text) after the program ends, so that its end is observable.
            try run(["new-session", "-d", "-s", name, "-x", "200", "-y", "50", "env HF_HUB_OFFLINE=1 " + line])
            try run(["set-option", "-t", name, "remain-on-exit", "on"])
        }

        private let tmux: String

        static var tmuxPath: String? {
            ["/usr/bin/tmux", "/usr/local/bin/tmux", "/opt/homebrew/bin/tmux"].first { FileManager.default.isExecutableFile(atPath: $0) }
        }

        @discardableResult
        func run(_ arguments: [String]) throws -> String {
            try Executables.run(URL(fileURLWithPath: tmux), arguments).output
        }

        /// The whole pane, scrollback included.
        func screen() throws -> String { try run(["capture-pane", "-p", "-J", "-S", "-1000", "-t", name]) }

        func type(_ text: String) throws { try run(["send-keys", "-t", name, "-l", text]) }
        func press(_ key: String) throws { try run(["send-keys", "-t", name, key]) }

        var isAlive: Bool { (try? run(["display-message", "-p", "-t", name, "#{pane_dead}"]).trimmingCharacters(in: .whitespacesAndNewlines)) == "0" }

        /// Waits until `condition` holds for the screen; returns the seconds it took, or fails after `timeout`.
        @discardableResult
        func wait(for what: String, timeout: Double, file: StaticString = #filePath, line: UInt = #line,
                  _ condition: (String) -> Bool) throws -> Double {
            let start = Date()
            while Date().timeIntervalSince(start) < timeout {
                if condition(try screen()) { return Date().timeIntervalSince(start) }
                Thread.sleep(forTimeInterval: 0.05)
            }
            XCTFail("timed out after \(timeout) s waiting for \(what); screen:\n\(try screen())", file: file, line: line)
            throw MissingTestData(description: "timed out waiting for \(what)")
        }

        func close() { _ = try? run(["kill-session", "-t", name]) }
    }

    /// The number of lines on `screen` that are exactly the empty prompt "> ".
    private func promptCount(_ screen: String) -> Int {
        screen.split(separator: "\n", omittingEmptySubsequences: false).filter { $0.trimmingCharacters(in: .whitespaces) == ">" }.count
    }

    func testTerminalChatStreamsStopsOnCtrlCAndRunsCommands() throws {
        let model = try CLIModels.smolLM2()
        let session = try TmuxSession(command: [try CLIRunner.binary().path, "chat", "--model", model.path, "--cpu",
                                                "--temperature", "0", "--max-tokens", "400"])
        defer { session.close() }
        try session.wait(for: "the prompt", timeout: 120) { $0.contains("/help for commands") && self.promptCount($0) == 1 }

        // A question: the answer streams in, then the speed line and a new prompt.
        try session.type("What is the capital of France?")
        try session.press("Enter")
        try session.wait(for: "the answer", timeout: 300) { $0.contains("The capital of France is Paris.") && $0.contains("answer 7 tokens") }
        try session.wait(for: "the prompt after the answer", timeout: 10) { self.promptCount($0) == 1 }

        // A follow-up reuses the cached conversation.
        try session.type("/stats")
        try session.press("Enter")
        try session.wait(for: "/stats", timeout: 10) { $0.contains("tokens in the KV cache") && $0.contains("1 exchanges kept") }

        // A long answer, interrupted once it is streaming: the prompt is back within a second.
        try session.type("Write a very long story about a dragon who learns to cook.")
        try session.press("Enter")
        let before = try session.screen()
        try session.wait(for: "the story to stream", timeout: 300) { screen in
            screen.count > before.count + 40
        }
        let prompts = promptCount(try session.screen())
        try session.press("C-c")
        let seconds = try session.wait(for: "the prompt after Ctrl-C", timeout: 5) {
            $0.contains("[stopped]") && self.promptCount($0) > prompts
        }
        XCTAssertLessThan(seconds, 1.0, "the prompt came back \(seconds) s after Ctrl-C")
        XCTAssertTrue(session.isAlive, "phi-gpu exited on Ctrl-C during an answer")

        try session.type("/reset")
        try session.press("Enter")
        try session.wait(for: "/reset", timeout: 120) { $0.contains("Conversation cleared.") }
        try session.type("/stats")
        try session.press("Enter")
        try session.wait(for: "/stats after /reset", timeout: 10) { $0.contains("context: 0 of 4096 tokens in the KV cache, 0 exchanges kept") }
        try session.type("/quit")
        try session.press("Enter")
        try session.wait(for: "phi-gpu to exit", timeout: 10) { _ in !session.isAlive }
    }

    func testSecondCtrlCAtThePromptExits() throws {
        let model = try CLIModels.smolLM2()
        let session = try TmuxSession(command: [try CLIRunner.binary().path, "chat", "--model", model.path, "--cpu"])
        defer { session.close() }
        try session.wait(for: "the prompt", timeout: 120) { self.promptCount($0) == 1 }
        try session.press("C-c")
        try session.wait(for: "the exit hint", timeout: 5) { $0.contains("Ctrl-C again") }
        XCTAssertTrue(session.isAlive)
        try session.press("C-c")
        try session.wait(for: "phi-gpu to exit", timeout: 5) { _ in !session.isAlive }
    }

    func testPipedChatWritesOnlyTheAnswers() throws {
        let model = try CLIModels.smolLM2()
        let output = try CLIRunner.run(["chat", "--model", model.path, "--cpu", "--temperature", "0", "--max-tokens", "12", "--verbose"],
                                       stdin: "What is the capital of France?\n\nAnd what is the capital of Italy?\n")
        XCTAssertEqual(output.status, 0, output.stderr)
        let answers = output.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(answers.count, 3, output.stdout)  // two answers and the final newline
        XCTAssertEqual(answers.first, "The capital of France is Paris.")  // the transformers reference answer
        XCTAssertTrue(answers[1].contains("Rome"), output.stdout)
        XCTAssertEqual(answers.last, "")
        // --verbose speed lines on stderr: the second turn reuses the 27 prompt and 7 answer tokens
        // of the first from the KV cache (the re-rendered conversation starts with them).
        let speeds = output.stderr.split(separator: "\n").filter { $0.hasPrefix("[prompt ") }
        XCTAssertEqual(speeds.count, 2, output.stderr)
        XCTAssertTrue(speeds.first?.hasPrefix("[prompt 27 tokens (0 cached)") == true, output.stderr)
        XCTAssertTrue(speeds.last?.contains("tokens (34 cached)") == true, output.stderr)
    }
}
