import ArgumentParser

/// The `phi-gpu` command: Phi-3.5-mini and Phi-4-mini on any GPU through Vulkan, with a CPU fallback.
@main
struct PhiGPUCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "phi-gpu",
        abstract: "Run Phi-3.5-mini and Phi-4-mini on any GPU through Vulkan compute, or on the CPU.",
        discussion: """
        Examples:
          phi-gpu devices              list the Vulkan devices and the one phi-gpu would use
        """,
        version: "0.1.0",
        subcommands: [Devices.self])
}
