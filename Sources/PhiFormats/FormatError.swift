import Foundation

/// A checkpoint file that cannot be read: names the file, the tensor or key when there is one,
/// what is wrong and, where it helps, what to do about it.
public struct FormatError: Error, CustomStringConvertible, Sendable {
    /// The file being read.
    public let file: URL
    /// The tensor (or metadata key) concerned, when there is one.
    public let tensor: String?
    /// What is wrong, and what to do.
    public let message: String

    public init(file: URL, tensor: String? = nil, _ message: String) {
        self.file = file
        self.tensor = tensor
        self.message = message
    }

    public var description: String {
        if let tensor { return "\(file.path): '\(tensor)': \(message)" }
        return "\(file.path): \(message)"
    }

    public var localizedDescription: String { description }
}
