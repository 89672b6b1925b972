import ArgumentParser

/// `--cpu` and `--device N`: which backend and GPU to run on. Shared by every command that runs a model.
struct BackendOptions: ParsableArguments {
    @Flag(help: "Run on the CPU even when a GPU is available.")
    var cpu = false

    @Option(name: .customLong("device"),
            help: "Index of the Vulkan device to use (see `phi-gpu devices`); PHI_GPU_DEVICE does the same.")
    var deviceIndex: Int?

    func validate() throws {
        if cpu && deviceIndex != nil {
            throw ValidationError("--cpu and --device exclude each other: choose the CPU or a GPU.")
        }
        if let deviceIndex, deviceIndex < 0 {
            throw ValidationError("--device must be a device index (0, 1, …); run `phi-gpu devices` to list them.")
        }
    }
}
