/// Why a tokenizer could not be loaded or used; every case names the file, key or value concerned.
public enum TokenizerError: Error, CustomStringConvertible, Sendable, Equatable {
    /// A file is missing, unreadable or not valid JSON.
    case unreadableFile(path: String, reason: String)
    /// A required entry is missing or has the wrong type.
    case missingField(source: String, field: String)
    /// The file describes a tokenizer this module does not implement.
    case unsupported(source: String, what: String)
    /// The file's contents are inconsistent (e.g. a merge names an unknown token).
    case invalidData(source: String, reason: String)
    /// A chat template that no renderer recognises.
    case unknownChatTemplate(source: String, excerpt: String)
    /// A chat conversation that the selected template cannot render.
    case invalidConversation(format: String, reason: String)

    public var description: String {
        switch self {
        case .unreadableFile(let path, let reason):
            return "cannot read tokenizer file \(path): \(reason)"
        case .missingField(let source, let field):
            return "\(source): missing or malformed '\(field)'"
        case .unsupported(let source, let what):
            return "\(source): unsupported tokenizer: \(what)"
        case .invalidData(let source, let reason):
            return "\(source): \(reason)"
        case .unknownChatTemplate(let source, let excerpt):
            return "\(source): unknown chat template (starts with \"\(excerpt)\"); pass a chat format by name "
                + "(one of: \(ChatFormat.allCases.map(\.rawValue).joined(separator: ", "))) or a known template"
        case .invalidConversation(let format, let reason):
            return "chat format \(format): \(reason)"
        }
    }
}
