import ArgumentParser
import Foundation
import PhiHub

/// `phi-gpu download NAME [--revision R]`: fetches a model's files into the Hugging Face cache
/// without running it, and prints the folder a later run loads them from.
struct Download: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Download a model into the Hugging Face cache without running it.",
        discussion: """
            NAME is a registered model (\(ModelRegistry.models.map(\.name).joined(separator: ", "))), \
            a hub repository id (org/name), a checkpoint directory or a .gguf file; local paths are \
            only checked and printed. Honours HF_HOME, HF_HUB_CACHE, HF_ENDPOINT, HF_TOKEN and \
            HF_HUB_OFFLINE. An interrupted download resumes when run again.

            Examples:
              phi-gpu download                       fetch Phi-3.5-mini (the default model)
              phi-gpu download phi-4-mini
              phi-gpu download mlx-community/Phi-3.5-mini-instruct-4bit --revision main
            """)

    @Argument(help: "The model to fetch.")
    var name: String = ModelRegistry.defaultModel.name

    @Option(help: "Branch, tag or commit of a hub model.")
    var revision: String?

    func validate() throws {
        do {
            _ = try ModelRegistry.resolve(name, revision: revision)
        } catch let error as ModelNameError {
            throw ValidationError(error.description)
        }
    }

    func run() async throws {
        switch try ModelRegistry.resolve(name, revision: revision).source {
        case .localDirectory(let url), .ggufFile(let url):
            print(url.path)
        case .hub(let repository, let revision):
            let client = HubClient(configuration: try HubConfiguration.fromEnvironment())
            let printer = DownloadProgressPrinter()
            do {
                let folder = try await client.snapshot(repository: repository, revision: revision) {
                    printer.report($0)
                }
                printer.finish()
                print(folder.path)
            } catch {
                printer.finish()
                throw error
            }
        }
    }
}
