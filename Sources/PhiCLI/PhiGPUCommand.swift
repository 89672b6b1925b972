import ArgumentParser

/// The `phi-gpu` command: Phi-3.5-mini and Phi-4-mini on any GPU through Vulkan, with a CPU fallback.
@main
struct PhiGPUCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "phi-gpu",
        abstract: "Run Phi-3.5-mini and Phi-4-mini on any GPU through Vulkan compute, or on the CPU.",
        discussion: """
        Without a subcommand, phi-gpu runs `chat`. Models are named by a registered name \
        (phi-3.5-mini, phi-4-mini), a hub repository id, a checkpoint directory or a .gguf file; \
        hub models are downloaded into the Hugging Face cache on first use (HF_HUB_OFFLINE=1 uses \
        only the cache).

        Examples:
          phi-gpu                             chat with Phi-3.5-mini (downloaded once)
          phi-gpu chat --model phi-4-mini     chat with Phi-4-mini
          phi-gpu chat --model .models/SmolLM2-135M-Instruct.Q4_1.gguf
          phi-gpu generate --json "What is the capital of France?"
          phi-gpu score "The capital of France is Paris."
          phi-gpu tokenize "Hello world"
          phi-gpu download phi-4-mini         fetch a model without running it
          phi-gpu devices                     list the Vulkan devices
          phi-gpu bench model --random phi-3.5-mini -p 512 -n 128
          phi-gpu bench kernels
        """,
        version: "0.1.0",
        subcommands: [Chat.self, Generate.self, ScoreText.self, Tokenize.self, Download.self, Devices.self, Bench.self],
        defaultSubcommand: Chat.self)
}
