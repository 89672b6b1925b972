// The build-time shader compiler that ShaderPlugin runs for every shader variant.
//
//   ShaderCompiler compile --source FILE.comp --name NAME --include-dir DIR [-D NAME=VALUE ...] --output OUT.swift
//   ShaderCompiler index --output OUT.swift NAME...
//
// `compile` turns one GLSL compute entry point into SPIR-V with shaderc (includes resolved from
// --include-dir, macro definitions from the variant list) and writes a Swift file that embeds the
// SPIR-V as `ShaderLibrary.NAME`. A GLSL error is printed as `file:line: error: message` and makes
// the build fail. `index` writes the table of every variant by name.
import Foundation

do {
    try run(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(1)
}
