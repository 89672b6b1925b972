import Foundation

/// One turn of a conversation. `tools` (a JSON text) is read by Phi-4-mini's template on the system turn.
public struct ChatMessage: Sendable, Equatable {
    public var role: String
    public var content: String
    public var tools: String?

    public init(role: String, content: String, tools: String? = nil) {
        self.role = role
        self.content = content
        self.tools = tools
    }
}

/// The chat formats phi-gpu renders; each equals one known Jinja template byte for byte.
public enum ChatFormat: String, CaseIterable, Sendable {
    /// Phi-3.5-mini-instruct: `<|system|>\n…<|end|>\n<|user|>\n…<|end|>\n<|assistant|>\n`.
    case phi3 = "phi3"
    /// The first Phi-3-mini template (llama.cpp's Phi-3 GGUF): BOS, user turns followed by
    /// `<|assistant|>\n`, system turns dropped, no generation-prompt switch.
    case phi3Legacy = "phi3-legacy"
    /// Phi-4-mini-instruct: `<|role|>…<|end|>` without newlines, an optional `<|tool|>…<|/tool|>` block in the system turn.
    case phi4Mini = "phi4-mini"
    /// ChatML: `<|im_start|>role\n…<|im_end|>\n`.
    case chatML = "chatml"
    /// SmolLM2's ChatML, which adds a default system turn when the conversation has none.
    case smolLM2 = "smollm2"
}

/// Renders conversations into prompt text the way the model's chat template does.
/// Chosen from the template text (recognised among the known ones) or by format name.
public struct ChatTemplate: Sendable {
    public let format: ChatFormat
    /// What the template writes for `bos_token` and `eos_token`.
    public let bosToken: String
    public let eosToken: String

    public init(format: ChatFormat, bosToken: String = "<s>", eosToken: String = "<|endoftext|>") {
        self.format = format
        self.bosToken = bosToken
        self.eosToken = eosToken
    }

    /// The format whose template is `text` (surrounding whitespace ignored); throws naming
    /// `source` when the template is none of the known ones.
    public static func recognize(_ text: String, source: String) throws -> ChatFormat {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if let format = KnownChatTemplates.formats[trimmed] { return format }
        throw TokenizerError.unknownChatTemplate(source: source, excerpt: String(trimmed.prefix(80)))
    }

    /// The tokenizer's chat template, or the format named by `format` when given (which then
    /// overrides whatever template the tokenizer carries).
    public init(tokenizer: Tokenizer, format: ChatFormat? = nil) throws {
        let chosen: ChatFormat
        if let format {
            chosen = format
        } else if let text = tokenizer.chatTemplateText {
            chosen = try ChatTemplate.recognize(text, source: "the tokenizer's chat template")
        } else {
            throw TokenizerError.missingField(source: "tokenizer", field: "chat_template (pass a chat format by name)")
        }
        self.init(format: chosen, bosToken: tokenizer.bosToken ?? "", eosToken: tokenizer.eosToken ?? "")
    }

    /// The token that closes each turn; generation should stop on it.
    public var endOfTurnToken: String {
        switch format {
        case .phi3, .phi3Legacy, .phi4Mini: return "<|end|>"
        case .chatML, .smolLM2: return "<|im_end|>"
        }
    }

    /// The prompt text of `messages`, ending with the assistant's header when
    /// `addGenerationPrompt`. `tools` (a JSON text) goes into the system turn, which only the
    /// Phi-4-mini format supports.
    public func render(messages: [ChatMessage], addGenerationPrompt: Bool, tools: String? = nil) throws -> String {
        var messages = messages
        if let tools {
            guard format == .phi4Mini else {
                throw TokenizerError.invalidConversation(format: format.rawValue, reason: "this template has no tools block")
            }
            guard let system = messages.firstIndex(where: { $0.role == "system" }) else {
                throw TokenizerError.invalidConversation(
                    format: format.rawValue, reason: "tools go in the system turn: add a system message")
            }
            if messages[system].tools == nil { messages[system].tools = tools }
        }
        var text = ""
        switch format {
        case .phi3:
            for message in messages {
                switch message.role {
                case "system" where !message.content.isEmpty, "user", "assistant":
                    text += "<|\(message.role)|>\n" + message.content + "<|end|>\n"
                default: continue
                }
            }
            text += addGenerationPrompt ? "<|assistant|>\n" : eosToken
        case .phi3Legacy:
            text += bosToken
            for message in messages {
                if message.role == "user" {
                    text += "<|user|>\n" + message.content + "<|end|>\n<|assistant|>\n"
                } else if message.role == "assistant" {
                    text += message.content + "<|end|>\n"
                }
            }
        case .phi4Mini:
            for message in messages {
                if message.role == "system", let tools = message.tools {
                    text += "<|system|>" + message.content + "<|tool|>" + tools + "<|/tool|><|end|>"
                } else {
                    text += "<|\(message.role)|>" + message.content + "<|end|>"
                }
            }
            text += addGenerationPrompt ? "<|assistant|>" : eosToken
        case .chatML, .smolLM2:
            if format == .smolLM2, let first = messages.first, first.role != "system" {
                text += "<|im_start|>system\n" + KnownChatTemplates.smolLM2SystemPrompt + "<|im_end|>\n"
            }
            for message in messages {
                text += "<|im_start|>" + message.role + "\n" + message.content + "<|im_end|>\n"
            }
            if addGenerationPrompt { text += "<|im_start|>assistant\n" }
        }
        return text
    }
}
