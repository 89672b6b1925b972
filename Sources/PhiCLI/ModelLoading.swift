import Foundation
import PhiEngine
import PhiFormats
import PhiGPU
import PhiHub
import PhiModel
import PhiTokenizer

/// Turns the model and backend flags into a loaded `Engine`: resolves the name, downloads hub
/// models with progress (or finds them cached when `HF_HUB_OFFLINE=1`), picks the backend and
/// shows progress while the weights are read and uploaded.
enum ModelLoading {
    /// The local checkpoint (directory or .gguf) of `options.model`, downloading it if needed, and
    /// the registry's extra stop strings.
    static func locate(_ name: String, revision: String?) async throws -> (url: URL, extraStopStrings: [String]) {
        let reference = try ModelRegistry.resolve(name, revision: revision)
        switch reference.source {
        case .localDirectory(let url), .ggufFile(let url):
            return (url, reference.extraStopStrings)
        case .hub(let repository, let revision):
            let client = HubClient(configuration: try HubConfiguration.fromEnvironment())
            if client.configuration.offline {
                return (try client.cachedSnapshot(repository: repository, revision: revision), reference.extraStopStrings)
            }
            if let cached = try? client.cachedSnapshot(repository: repository, revision: revision) {
                return (cached, reference.extraStopStrings)
            }
            Console.note("Downloading \(repository) (\(revision)) into \(client.configuration.cacheDirectory.path)…")
            let printer = DownloadProgressPrinter()
            do {
                let folder = try await client.snapshot(repository: repository, revision: revision) { printer.report($0) }
                printer.finish()
                return (folder, reference.extraStopStrings)
            } catch {
                printer.finish()
                throw error
            }
        }
    }

    /// The backend the flags ask for; a fallback to the CPU is noted on standard error.
    static func backend(_ options: BackendOptions) throws -> any InferenceBackend {
        try BackendSelection.make(options.request) { Console.note($0) }
    }

    /// Loads the engine for the flags, with progress bars for reading weights and the GPU upload.
    static func engine(model: ModelOptions, backend backendOptions: BackendOptions,
                       verbose: Bool) async throws -> (engine: Engine, extraStopStrings: [String]) {
        let (url, extraStops) = try await locate(model.model, revision: model.revision)
        let backend = try backend(backendOptions)
        var upload: ProgressLine?
        if let gpu = backend as? GPUBackend {
            let line = ProgressLine("uploading weights to \(gpu.context.device.physical.name)")
            gpu.uploadProgress = { done, total in line.update(total > 0 ? Double(done) / Double(total) : 1) }
            upload = line
        }
        let reading = ProgressLine("reading \(url.lastPathComponent)")
        let clock = ContinuousClock()
        let start = clock.now
        let engine: Engine
        do {
            engine = try Engine(model: url, contextLength: model.ctx, backend: .custom(backend)) { reading.update($0) }
        } catch {
            reading.finish()
            upload?.finish()
            throw error
        }
        reading.finish()
        upload?.finish()
        if verbose {
            let seconds = Generator.seconds(clock.now - start)
            Console.note("Loaded \(url.path) on \(engine.backendName) in \(String(format: "%.1f", seconds)) s; context \(model.ctx) tokens.")
        }
        return (engine, extraStops)
    }

    /// Only the tokenizer of `options.model` (for `tokenize` and `bench tokenizer`), without the weights.
    static func tokenizer(_ options: ModelOptions) async throws -> Tokenizer {
        let (url, _) = try await locate(options.model, revision: options.revision)
        if url.pathExtension.lowercased() == "gguf" {
            return try Tokenizer(gguf: try GGUFFile(contentsOf: url))
        }
        return try Tokenizer.load(directory: url)
    }
}
