import Foundation

/// Executables the build put beside the test bundle, and running them.
public enum Executables {
    /// The built executable `name` beside the bundle containing `marker` (the build directory).
    public static func built(_ name: String, besideBundleOf marker: AnyClass) throws -> URL {
        let bundle = Bundle(for: marker).bundleURL
        let candidates = [bundle, bundle.deletingLastPathComponent()].map { $0.appendingPathComponent(name) }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw MissingTestData(description: "\(name) not found beside \(bundle.path); run swift build first")
        }
        return found
    }

    /// Runs `executable arguments…` to its end: exit status and standard output and error together.
    public static func run(_ executable: URL, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
