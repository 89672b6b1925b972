import Foundation

/// One compiled compute shader: its variant name and SPIR-V words, embedded in the binary.
///
/// The SPIR-V is generated at build time by ShaderPlugin from `Shaders/`; nothing is read from
/// disk at run time. Each variant appears as a static property of `ShaderLibrary`.
public struct ShaderBinary: Sendable {
    /// The variant's name as listed in `Shaders/variants.json` (or derived from its file name).
    public let name: String
    /// The SPIR-V module, one 32-bit word per element.
    public let words: [UInt32]

    /// Decodes the base64 text the build embedded.
    public init(name: String, base64: String) {
        self.name = name
        let data = Data(base64Encoded: base64) ?? Data()
        self.words = data.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self) }
        }
    }
}

/// The namespace of every shader variant compiled from `Shaders/` (see `ShaderLibrary.all`).
public enum ShaderLibrary {
    /// Looks a variant up by name.
    public static func named(_ name: String) -> ShaderBinary? {
        all.first { $0.name == name }
    }
}
