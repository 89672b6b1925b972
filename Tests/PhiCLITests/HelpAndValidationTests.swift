import Foundation
import TestSupport
import XCTest

/// Whole command lines: help texts with examples, and flags rejected before anything is loaded
/// (exit status 64, one `Error:` line naming the flag) or failures reported in one line (status 1).
final class HelpAndValidationTests: XCTestCase {
    func testRootHelpListsSubcommandsWithChatAsDefault() throws {
        let output = try CLIRunner.run(["--help"])
        XCTAssertEqual(output.status, 0)
        for name in ["chat (default)", "generate", "score", "tokenize", "download", "devices", "bench"] {
            XCTAssertTrue(output.stdout.contains("  \(name) "), "root help lacks \(name):\n\(output.stdout)")
        }
        XCTAssertTrue(output.stdout.contains("phi-gpu bench model --random phi-3.5-mini -p 512 -n 128"))
    }

    func testEverySubcommandHelpHasExamples() throws {
        let commands = [["chat"], ["generate"], ["score"], ["tokenize"], ["download"], ["devices"], ["bench"],
                        ["bench", "model"], ["bench", "kernels"], ["bench", "tokenizer"]]
        for command in commands {
            let output = try CLIRunner.run(command + ["--help"])
            XCTAssertEqual(output.status, 0, command.joined(separator: " "))
            XCTAssertTrue(output.stdout.contains("Examples:"), "\(command) help has no examples:\n\(output.stdout)")
            XCTAssertTrue(output.stdout.contains("phi-gpu \(command.joined(separator: " "))"), "\(command) examples")
        }
        let chat = try CLIRunner.run(["chat", "--help"]).stdout
        for flag in ["--model", "--ctx", "--cpu", "--device", "--temperature", "--top-p", "--top-k", "--min-p",
                     "--repetition-penalty", "--seed", "--max-tokens", "--extra-eos", "--system", "--verbose", "/reset", "/stats"] {
            XCTAssertTrue(chat.contains(flag), "chat --help lacks \(flag)")
        }
    }

    /// Each bad command line and the exact error line it must give, with exit status 64.
    func testInvalidFlagsAreRejectedBeforeLoading() throws {
        let cases: [([String], String)] = [
            (["generate", "--temperature=-1", "hi"], "Error: --temperature must be 0 or more (got -1.0)."),
            (["generate", "--top-p", "0", "hi"], "Error: --top-p must be in (0, 1] (got 0.0)."),
            (["generate", "--top-k=-2", "hi"], "Error: --top-k must be 0 (off) or more (got -2)."),
            (["generate", "--min-p", "1.5", "hi"], "Error: --min-p must be in [0, 1) (got 1.5)."),
            (["chat", "--repetition-penalty", "0"], "Error: --repetition-penalty must be more than 0 (got 0.0); 1 is off."),
            (["chat", "--max-tokens", "0"], "Error: --max-tokens must be at least 1 (got 0)."),
            (["chat", "--ctx", "0"], "Error: --ctx must be between 1 and 131072 tokens (got 0)."),
            (["chat", "--cpu", "--device", "0"], "Error: --cpu and --device exclude each other: choose the CPU or a GPU."),
            (["chat", "--threads", "0"], "Error: --threads must be at least 1 (got 0)."),
            (["chat", "--model", "/no/such/model.gguf"],
             "Error: no such file or directory: /no/such/model.gguf; check the path, or give a registered name or hub id"),
            (["score"], "Error: Give TEXT to score, or --ids."),
            (["score", "--ids", "1,x"], "Error: --ids: 'x' is not a token id (a whole number, 0 or more)."),
            (["bench", "model", "-r", "0"], "Error: -r must be at least 1 (got 0)."),
            (["bench", "model", "-p", "0", "-n", "0"], "Error: -p and -n are both 0: nothing to measure."),
            (["bench", "model", "--random", "phi-5"], "Error: --random must be one of phi-3.5-mini, phi-4-mini (got 'phi-5')."),
            (["bench", "kernels", "--tokens", "1,0"],
             "Error: --tokens must be comma-separated counts between 1 and 8192, such as 1,512 (got '1,0')."),
        ]
        for (arguments, expected) in cases {
            let output = try CLIRunner.run(arguments)
            XCTAssertEqual(output.status, 64, "\(arguments): \(output.stderr)")
            XCTAssertEqual(output.stderr.split(separator: "\n").first.map(String.init), expected, "\(arguments)")
            XCTAssertEqual(output.stdout, "", "\(arguments)")
        }
    }

    /// Failures after validation: one line, exit status 1, no stack trace.
    func testRuntimeFailuresAreOneLine() throws {
        // The fixture has no tokenizer files: loading must fail naming what is missing.
        let bare = try TestPaths.require(TestPaths.fixtures.appendingPathComponent("tiny-phi3.5-4bit"),
                                         hint: "run python3 Scripts/fixtures/make_tiny_models.py")
        let output = try CLIRunner.run(["generate", "--model", bare.path, "--cpu", "hi"])
        XCTAssertEqual(output.status, 1)
        let errorLines = output.stderr.split(separator: "\n").filter { $0.hasPrefix("Error:") }
        XCTAssertEqual(errorLines.count, 1, output.stderr)
        XCTAssertTrue(errorLines.first?.contains("tokenizer") == true, output.stderr)
        XCTAssertFalse(output.stderr.contains("Stack"), output.stderr)

        let offline = try CLIRunner.run(["tokenize", "--model", "nobody-here/no-such-model", "hi"],
                                        environment: ["HF_HUB_CACHE": FileManager.default.temporaryDirectory.appendingPathComponent("empty-hub-\(UUID())").path])
        XCTAssertEqual(offline.status, 1)
        XCTAssertEqual(offline.stderr.split(separator: "\n").count, 1, offline.stderr)
        XCTAssertTrue(offline.stderr.hasPrefix("Error: "), offline.stderr)
    }
}
