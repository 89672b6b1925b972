// Compiles every compute entry point under Shaders/ to SPIR-V at build time.
//
// Shaders/*.comp are entry points, Shaders/*.glsl are shared includes, and Shaders/variants.json
// lists the variants to build from one entry point with different defines:
//   {"variants": [{"name": "matvecQ4", "source": "matvec.comp", "defines": {"BITS": "4"}}]}
// An entry point that no variant names is built once, named after its file (rms_norm.comp → rmsNorm).
// Each variant is one build command whose inputs are its entry point and the includes it reaches,
// so changing one shader recompiles only the variants that depend on it.
import Foundation
import PackagePlugin

@main
struct ShaderPlugin: BuildToolPlugin {
    struct VariantList: Decodable {
        struct Variant: Decodable {
            var name: String
            var source: String
            var defines: [String: String]?
        }
        var variants: [Variant]
    }

    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        let shaders = context.package.directoryURL.appending(path: "Shaders")
        let compiler = try context.tool(named: "ShaderCompiler").url
        let files = try FileManager.default.contentsOfDirectory(atPath: shaders.path).sorted()
        let entryPoints = files.filter { $0.hasSuffix(".comp") }

        var variants: [VariantList.Variant] = []
        let listURL = shaders.appending(path: "variants.json")
        if FileManager.default.fileExists(atPath: listURL.path) {
            variants = try JSONDecoder().decode(VariantList.self, from: Data(contentsOf: listURL)).variants
        }
        let named = Set(variants.map(\.source))
        for file in entryPoints where !named.contains(file) {
            variants.append(.init(name: Self.identifier(forFile: file), source: file, defines: nil))
        }

        var commands: [Command] = []
        for variant in variants {
            let source = shaders.appending(path: variant.source)
            let output = context.pluginWorkDirectoryURL.appending(path: "\(variant.name).swift")
            var arguments = ["compile", "--source", source.path, "--name", variant.name,
                             "--include-dir", shaders.path, "--output", output.path]
            for (key, value) in (variant.defines ?? [:]).sorted(by: { $0.key < $1.key }) {
                arguments += ["-D", "\(key)=\(value)"]
            }
            commands.append(.buildCommand(
                displayName: "Compiling shader \(variant.name) (\(variant.source))",
                executable: compiler, arguments: arguments,
                inputFiles: [source] + Self.includes(of: source, in: shaders),
                outputFiles: [output]))
        }
        let index = context.pluginWorkDirectoryURL.appending(path: "ShaderIndex.swift")
        commands.append(.buildCommand(
            displayName: "Indexing \(variants.count) shader variants",
            executable: compiler,
            arguments: ["index", "--output", index.path] + variants.map(\.name),
            inputFiles: FileManager.default.fileExists(atPath: listURL.path) ? [listURL] : [],
            outputFiles: [index]))
        return commands
    }

    /// `rms_norm.comp` → `rmsNorm`.
    static func identifier(forFile file: String) -> String {
        let stem = file.split(separator: ".").first.map(String.init) ?? file
        let parts = stem.split(separator: "_")
        return parts.enumerated().map { $0 == 0 ? $1.lowercased() : $1.prefix(1).uppercased() + $1.dropFirst() }
            .joined()
    }

    /// The files `source` includes, directly or through other includes.
    static func includes(of source: URL, in directory: URL) -> [URL] {
        var found: [URL] = []
        var seen: Set<String> = []
        var pending = [source]
        while let file = pending.popLast() {
            guard let text = try? String(contentsOf: file, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") {
                let trimmed = line.trimmingCharacters(in: .whitespaces)
                guard trimmed.hasPrefix("#include") else { continue }
                let name = trimmed.split(separator: "\"").dropFirst().first.map(String.init) ?? ""
                guard !name.isEmpty, seen.insert(name).inserted else { continue }
                let url = directory.appending(path: name)
                found.append(url)
                pending.append(url)
            }
        }
        return found
    }
}
