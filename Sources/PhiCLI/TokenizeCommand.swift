import ArgumentParser
import Foundation

/// `phi-gpu tokenize TEXT`: the token ids of a text under a model's tokenizer.
struct Tokenize: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show the token ids of a text (only the tokenizer is loaded).",
        discussion: """
            Prints one token per line: its id and its text. --special adds the tokenizer's BOS and \
            reads special tokens such as <|user|> in TEXT as themselves.

            Examples:
              phi-gpu tokenize "Hello world"
              phi-gpu tokenize --model phi-4-mini --json "<|user|>Hi<|end|>" --special
            """)

    @Argument(help: "The text to tokenize.")
    var text: String

    @Flag(help: "Add the BOS token and parse special tokens in TEXT.")
    var special = false

    @Flag(help: "Print one JSON object: ids and token texts.")
    var json = false

    @OptionGroup(title: "Model") var model: ModelOptions

    /// What `--json` prints.
    struct Report: Encodable {
        var ids: [Int]
        var tokens: [String]
    }

    func run() async throws {
        let tokenizer = try await ModelLoading.tokenizer(model)
        let ids = tokenizer.encode(text, addSpecialTokens: special, parseSpecial: special)
        let tokens = ids.map { tokenizer.token(for: $0) ?? "" }
        if json {
            try JSONOutput.print(Report(ids: ids, tokens: tokens), pretty: false)
        } else {
            for (id, token) in zip(ids, tokens) { Console.out("\(id)\t\(token.debugDescription)\n") }
        }
    }
}
