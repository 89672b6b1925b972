import Foundation
import TestSupport
import XCTest

/// Runs the build-time shader compiler (the tool ShaderPlugin invokes) on broken and good shaders.
final class ShaderCompilerTests: XCTestCase {
    /// The tool sits next to the test bundle in the build directory.
    func compilerTool() throws -> URL {
        try Executables.built("ShaderCompiler-tool", besideBundleOf: Self.self)
    }

    func run(_ tool: URL, _ arguments: [String]) throws -> (status: Int32, output: String) {
        try Executables.run(tool, arguments)
    }

    func testABrokenShaderFailsWithItsFileAndLine() throws {
        let tool = try compilerTool()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("shader-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "float helper() { return 1.0 }\n".write(to: directory.appendingPathComponent("broken.glsl"), atomically: true, encoding: .utf8)
        try """
        #version 450
        #extension GL_GOOGLE_include_directive : require
        layout(local_size_x = 1) in;
        void main() {
            float x = missing_value;
        }
        """.write(to: directory.appendingPathComponent("bad.comp"), atomically: true, encoding: .utf8)
        let output = directory.appendingPathComponent("bad.swift")
        let result = try run(tool, ["compile", "--source", directory.appendingPathComponent("bad.comp").path, "--name", "bad",
                                    "--include-dir", directory.path, "--output", output.path])
        XCTAssertNotEqual(result.status, 0)
        XCTAssertTrue(result.output.contains("bad.comp:5: error"), result.output)
        XCTAssertTrue(result.output.contains("missing_value"), result.output)
        XCTAssertFalse(FileManager.default.fileExists(atPath: output.path))

        // An error inside an included file names the included file and its line.
        try """
        #version 450
        #extension GL_GOOGLE_include_directive : require
        #include "broken.glsl"
        layout(local_size_x = 1) in;
        void main() {}
        """.write(to: directory.appendingPathComponent("includes.comp"), atomically: true, encoding: .utf8)
        let included = try run(tool, ["compile", "--source", directory.appendingPathComponent("includes.comp").path,
                                      "--name", "includes", "--include-dir", directory.path, "--output", output.path])
        XCTAssertNotEqual(included.status, 0)
        XCTAssertTrue(included.output.contains("broken.glsl:1: error"), included.output)
    }

    func testDefinesSelectAVariant() throws {
        let tool = try compilerTool()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("shader-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = directory.appendingPathComponent("variant.comp")
        try """
        #version 450
        layout(local_size_x = 1) in;
        #ifndef BITS
        #error BITS must be defined
        #endif
        layout(std430, binding = 0) buffer Out { uint value[]; };
        void main() { value[0] = BITS; }
        """.write(to: source, atomically: true, encoding: .utf8)
        let output = directory.appendingPathComponent("variant.swift")
        let without = try run(tool, ["compile", "--source", source.path, "--name", "v", "--output", output.path])
        XCTAssertNotEqual(without.status, 0)
        XCTAssertTrue(without.output.contains("variant.comp:4: error"), without.output)
        let with = try run(tool, ["compile", "--source", source.path, "--name", "v4", "-D", "BITS=4", "--output", output.path])
        XCTAssertEqual(with.status, 0, with.output)
        let generated = try String(contentsOf: output, encoding: .utf8)
        XCTAssertTrue(generated.contains("public static let v4 = ShaderBinary(name: \"v4\""), generated)
    }
}
