// swift-tools-version: 6.0
// phi-gpu: Phi-3.5-mini and Phi-4-mini on any GPU through Vulkan compute, with a CPU fallback.
//
// Modules, each importing only those below it:
//   CVulkan, CShaderc      C APIs of the Vulkan loader and of shaderc (system libraries)
//   PhiFormats             checkpoint file formats: safetensors, GGUF, dequantization
//   PhiTokenizer           tokenizers, streaming detokenizer, chat templates
//   PhiModel               model configs, the engine's weight layout, loaders, registry, backend protocol
//   PhiHub                 the Hugging Face hub client: cache layout, resumable checked downloads
//   VulkanKit              a thin Swift wrapper over the Vulkan C API, one type per object
//   PhiShaders             the SPIR-V of Shaders/, compiled by `swift build` (ShaderPlugin)
//   PhiCPU, PhiGPU         the two backends (CPhiCPU: the CPU's AVX2 kernels, chosen at run time)
//   PhiEngine              backend choice, generation loop
//   PhiCLI                 the `phi-gpu` executable
import PackageDescription

let package = Package(
    name: "phi-gpu",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "phi-gpu", targets: ["PhiCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CVulkan", pkgConfig: "vulkan",
            providers: [.apt(["libvulkan-dev"])]),
        .systemLibrary(
            name: "CShaderc",
            providers: [.apt(["libshaderc-dev", "glslang-dev"])]),
        .executableTarget(name: "ShaderCompiler", dependencies: ["CShaderc"]),
        .plugin(
            name: "ShaderPlugin", capability: .buildTool(),
            dependencies: ["ShaderCompiler"], path: "Sources/ShaderPlugin"),
        .target(name: "PhiShaders", plugins: ["ShaderPlugin"]),
        .target(name: "VulkanKit", dependencies: ["CVulkan"]),
        .target(name: "PhiFormats"),
        .target(name: "PhiTokenizer", dependencies: ["PhiFormats"]),
        .target(name: "PhiModel", dependencies: ["PhiFormats", "PhiTokenizer"]),
        .target(
            name: "PhiHub",
            dependencies: [.product(name: "AsyncHTTPClient", package: "async-http-client")]),
        // Optimised even in debug builds, so tests run the CPU backend at a usable speed.
        .target(name: "CPhiCPU", cSettings: [.unsafeFlags(["-O2"])]),
        .target(name: "PhiCPU", dependencies: ["PhiModel", "CPhiCPU"]),
        .target(name: "PhiGPU", dependencies: ["PhiModel", "VulkanKit", "PhiShaders"]),
        .target(name: "PhiEngine", dependencies: ["PhiModel", "PhiHub", "PhiCPU", "PhiGPU"]),
        .executableTarget(
            name: "PhiCLI",
            dependencies: [
                "PhiEngine", "VulkanKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),

        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "VulkanKitTests", dependencies: ["VulkanKit", "PhiShaders", "TestSupport"]),
        .testTarget(name: "PhiGPUTests", dependencies: ["PhiGPU", "PhiCPU", "TestSupport"]),
        .testTarget(name: "PhiFormatsTests", dependencies: ["PhiFormats", "TestSupport"]),
        .testTarget(name: "PhiTokenizerTests", dependencies: ["PhiTokenizer", "PhiFormats", "TestSupport"]),
        .testTarget(name: "PhiHubTests", dependencies: ["PhiHub", "TestSupport"]),
        .testTarget(name: "PhiModelTests", dependencies: ["PhiModel", "TestSupport"]),
        .testTarget(name: "PhiCPUTests", dependencies: ["PhiCPU", "TestSupport"]),
        .testTarget(name: "PhiCLITests", dependencies: ["PhiCLI", "TestSupport"]),
        .testTarget(name: "PhiEngineTests", dependencies: ["PhiEngine", "TestSupport"]),
    ]
)
