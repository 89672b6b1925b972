import ArgumentParser
import Foundation
import PhiEngine
import PhiHub

/// `--cpu`, `--device N` and `--threads N`: which backend and GPU to run on. Shared by every command that runs a model.
struct BackendOptions: ParsableArguments {
    @Flag(help: "Run on the CPU even when a GPU is available.")
    var cpu = false

    @Option(name: .customLong("device"),
            help: "Index of the Vulkan device to use (see `phi-gpu devices`); PHI_GPU_DEVICE does the same.")
    var deviceIndex: Int?

    @Option(help: "CPU threads for the CPU backend (default: all cores).")
    var threads: Int?

    func validate() throws {
        if cpu && deviceIndex != nil {
            throw ValidationError("--cpu and --device exclude each other: choose the CPU or a GPU.")
        }
        if let deviceIndex, deviceIndex < 0 {
            throw ValidationError("--device must be a device index (0, 1, …); run `phi-gpu devices` to list them.")
        }
        if let threads, threads < 1 {
            throw ValidationError("--threads must be at least 1 (got \(threads)).")
        }
    }

    /// The request `BackendSelection.make` turns into a backend.
    var request: BackendSelection.Request {
        BackendSelection.Request(forceCPU: cpu, deviceIndex: deviceIndex, threads: threads)
    }
}

/// `--model NAME` and `--ctx N`: which checkpoint to load and how long its context window is.
struct ModelOptions: ParsableArguments {
    @Option(name: [.short, .long],
            help: ArgumentHelp("A registered model (\(ModelRegistry.models.map(\.name).joined(separator: ", "))), a hub repository id, a checkpoint directory or a .gguf file.",
                               valueName: "name"))
    var model: String = ModelRegistry.defaultModel.name

    @Option(help: "Branch, tag or commit of a hub model.")
    var revision: String?

    @Option(help: ArgumentHelp("Context window in tokens: the most the KV cache holds.", valueName: "tokens"))
    var ctx: Int = 4096

    static let largestContext = 131_072

    func validate() throws {
        guard ctx >= 1, ctx <= Self.largestContext else {
            throw ValidationError("--ctx must be between 1 and \(Self.largestContext) tokens (got \(ctx)).")
        }
        try Self.validateName(model, revision: revision)
    }

    /// Rejects a model name that no form accepts (a missing path, a malformed hub id).
    static func validateName(_ name: String, revision: String? = nil) throws {
        do {
            _ = try ModelRegistry.resolve(name, revision: revision)
        } catch let error as ModelNameError {
            throw ValidationError(error.description)
        }
    }
}

/// `--verbose`: timings, backend choice and other details on standard error.
struct VerboseOption: ParsableArguments {
    @Flag(name: [.short, .long], help: "Print details (backend, timings, seeds) on standard error.")
    var verbose = false
}
