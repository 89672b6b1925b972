import Foundation

extension Tokenizer {
    /// Loads `tokenizer.json` from `directory`, with `tokenizer_config.json` (BOS/EOS, chat
    /// template), `chat_template.jinja` and `generation_config.json` (more end tokens) when present.
    public static func load(directory: URL) throws -> Tokenizer {
        let tokenizerFile = directory.appendingPathComponent("tokenizer.json")
        var definition = try TokenizerJSONLoader.definition(tokenizerJSON: tokenizerFile)
        try TokenizerJSONLoader.applyConfiguration(in: directory, to: &definition)
        return try Tokenizer(definition)
    }
}

/// Reads the Hugging Face `tokenizer.json` format (BPE models only).
enum TokenizerJSONLoader {
    static func readJSON(_ url: URL) throws -> JSONValue {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw TokenizerError.unreadableFile(path: url.path, reason: "\(error.localizedDescription)")
        }
        do {
            let value = try JSONParser.parse([UInt8](data))
            guard value.members != nil else { throw TokenizerError.unreadableFile(path: url.path, reason: "not a JSON object") }
            return value
        } catch let error as TokenizerError { throw error } catch {
            throw TokenizerError.unreadableFile(path: url.path, reason: "invalid JSON: \(error)")
        }
    }

    static func definition(tokenizerJSON url: URL) throws -> TokenizerDefinition {
        let json = try readJSON(url)
        let source = url.path
        guard let model = json["model"], model.members != nil else {
            throw TokenizerError.missingField(source: source, field: "model")
        }
        guard (model["type"]?.string ?? "BPE") == "BPE" else {
            throw TokenizerError.unsupported(source: source, what: "model type \(model["type"]?.string ?? "?") (only BPE)")
        }
        guard let vocab = model["vocab"]?.members else {
            throw TokenizerError.missingField(source: source, field: "model.vocab")
        }
        let byteFallback = model["byte_fallback"]?.bool ?? false
        var definition = TokenizerDefinition(source: source, kind: byteFallback ? .sentencePiece : .byteLevel)
        try readPipeline(json, source: source, into: &definition)

        var idsByToken = ByteTable(capacity: vocab.count)  // token UTF-8 → id
        var tokens = [String?](repeating: nil, count: vocab.count)
        for member in vocab {
            let token = member.key, value = member.value
            guard let id = value.int, id >= 0, id < 10_000_000 else {
                throw TokenizerError.invalidData(source: source, reason: "model.vocab[\(token)] is not a token id")
            }
            if id >= tokens.count { tokens += [String?](repeating: nil, count: id + 1 - tokens.count) }
            tokens[id] = token
            idsByToken.insert(Array(token.utf8), value: Int32(id))
        }
        definition.modelTokens = tokens
        definition.ignoresMerges = model["ignore_merges"]?.bool ?? false
        if let unknown = model["unk_token"]?.string { definition.unknownId = idsByToken.value(for: Array(unknown.utf8)).map(Int.init) }

        let merges = model["merges"]?.array ?? []
        definition.merges.reserveCapacity(merges.count)
        for (rank, entry) in merges.enumerated() {
            let parts: [[UInt8]]
            if let pair = entry.array, pair.count == 2, let left = pair[0].string, let right = pair[1].string {
                parts = [Array(left.utf8), Array(right.utf8)]
            } else if let text = entry.string, let space = text.utf8.firstIndex(of: 0x20) {
                parts = [Array(text.utf8[..<space]), Array(text.utf8[text.utf8.index(after: space)...])]
            } else {
                throw TokenizerError.invalidData(source: source, reason: "model.merges[\(rank)] is not a pair of tokens")
            }
            guard let left = idsByToken.value(for: parts[0]), let right = idsByToken.value(for: parts[1]),
                  let merged = idsByToken.value(for: parts[0] + parts[1]) else {
                throw TokenizerError.invalidData(source: source, reason:
                    "model.merges[\(rank)] (\(String(decoding: parts[0], as: UTF8.self)) \(String(decoding: parts[1], as: UTF8.self))) names a token not in model.vocab")
            }
            definition.merges.append(.init(left: left, right: right, merged: merged, rank: Int32(rank)))
        }

        for entry in json["added_tokens"]?.array ?? [] {
            guard let id = entry["id"]?.int, let content = entry["content"]?.string else {
                throw TokenizerError.invalidData(source: source, reason: "added_tokens entry without id or content")
            }
            definition.addedTokens.append(AddedToken(
                id: id, content: content, isSpecial: entry["special"]?.bool ?? false,
                stripsLeft: entry["lstrip"]?.bool ?? false, stripsRight: entry["rstrip"]?.bool ?? false,
                singleWord: entry["single_word"]?.bool ?? false))
        }
        // A TemplateProcessing post-processor says whether BOS/EOS are added (tokenizer_config.json may override).
        if let processor = json["post_processor"], processor["type"]?.string == "TemplateProcessing",
           let single = processor["single"]?.array {
            func special(_ item: JSONValue?) -> String? { item?["SpecialToken"]?["id"]?.string }
            if let first = special(single.first), let id = definition.id(of: first) {
                definition.addsBOS = true
                definition.bosId = id
                definition.bosToken = first
            }
            if single.count > 1, let last = special(single.last), let id = definition.id(of: last) {
                definition.addsEOS = true
                definition.eosIds = [id]
                definition.eosToken = last
            }
        }
        return definition
    }

    /// Recognises the normalizer / pre-tokenizer combination; anything else is unsupported.
    private static func readPipeline(_ json: JSONValue, source: String, into definition: inout TokenizerDefinition) throws {
        let normalizer = json["normalizer"].flatMap { $0.isNull ? nil : $0 }
        let preTokenizer = json["pre_tokenizer"].flatMap { $0.isNull ? nil : $0 }
        func describe(_ value: JSONValue?) -> String {
            guard let value else { return "null" }
            let types = (value["normalizers"]?.array ?? value["pretokenizers"]?.array ?? [value]).compactMap { $0["type"]?.string }
            return types.joined(separator: "+")
        }
        switch definition.kind {
        case .sentencePiece:
            let steps = normalizer?["normalizers"]?.array ?? normalizer.map { [$0] } ?? []
            let prepends = steps.contains { $0["type"]?.string == "Prepend" && $0["prepend"]?.string == "▁" }
            let replaces = steps.contains {
                $0["type"]?.string == "Replace" && $0["pattern"]?["String"]?.string == " " && $0["content"]?.string == "▁"
            }
            if replaces && preTokenizer == nil && steps.count == (prepends ? 2 : 1) {
                definition.prependsSpace = prepends
            } else if normalizer == nil, let pre = preTokenizer, pre["type"]?.string == "Metaspace",
                      pre["replacement"]?.string == "▁", pre["split"]?.bool == false {
                definition.prependsSpace = (pre["prepend_scheme"]?.string ?? "always") != "never"
            } else {
                throw TokenizerError.unsupported(
                    source: source, what: "SentencePiece normalizer \(describe(normalizer)) with pre_tokenizer \(describe(preTokenizer))")
            }
        case .byteLevel:
            if let normalizer, normalizer["normalizers"]?.array?.isEmpty != true {
                throw TokenizerError.unsupported(source: source, what: "byte-level normalizer \(describe(normalizer))")
            }
            let steps = preTokenizer?["type"]?.string == "Sequence"
                ? preTokenizer?["pretokenizers"]?.array ?? [] : preTokenizer.map { [$0] } ?? []
            let types = steps.map { $0["type"]?.string ?? "" }
            let last = steps.last
            let addsPrefixSpace = last?["add_prefix_space"]?.bool ?? false
            let usesRegex = last?["use_regex"]?.bool ?? true
            if types == ["Split", "ByteLevel"], !usesRegex, !addsPrefixSpace,
               steps[0]["pattern"]?["Regex"]?.string == PreTokenizer.o200kPattern,
               steps[0]["behavior"]?.string == "Isolated", steps[0]["invert"]?.bool != true {
                definition.preTokenizer = .o200k
            } else if types == ["ByteLevel"], usesRegex, !addsPrefixSpace {
                definition.preTokenizer = .gpt2(isolateDigits: false)
            } else if types == ["Digits", "ByteLevel"], steps[0]["individual_digits"]?.bool == true, usesRegex, !addsPrefixSpace {
                definition.preTokenizer = .gpt2(isolateDigits: true)
            } else {
                throw TokenizerError.unsupported(source: source, what: "byte-level pre_tokenizer \(describe(preTokenizer))")
            }
        }
    }

    /// Reads BOS/EOS and the chat template from the files beside tokenizer.json.
    static func applyConfiguration(in directory: URL, to definition: inout TokenizerDefinition) throws {
        let manager = FileManager.default
        func tokenText(_ value: JSONValue?) -> String? { value?.string ?? value?["content"]?.string }
        let configURL = directory.appendingPathComponent("tokenizer_config.json")
        if manager.fileExists(atPath: configURL.path) {
            let config = try readJSON(configURL)
            if let bos = tokenText(config["bos_token"]) {
                definition.bosToken = bos
                definition.bosId = definition.id(of: bos)
            }
            if let eos = tokenText(config["eos_token"]) {
                definition.eosToken = eos
                if let id = definition.id(of: eos) { definition.eosIds.insert(id, at: 0) }
            }
            if let adds = config["add_bos_token"]?.bool { definition.addsBOS = adds && definition.bosId != nil }
            if let adds = config["add_eos_token"]?.bool { definition.addsEOS = adds }
            if let template = config["chat_template"]?.string {
                definition.chatTemplate = template
            } else if let templates = config["chat_template"]?.array {
                definition.chatTemplate = templates.first { $0["name"]?.string == "default" }?["template"]?.string
            }
        }
        let jinjaURL = directory.appendingPathComponent("chat_template.jinja")
        if manager.fileExists(atPath: jinjaURL.path) {
            do { definition.chatTemplate = try String(contentsOf: jinjaURL, encoding: .utf8) } catch {
                throw TokenizerError.unreadableFile(path: jinjaURL.path, reason: "\(error.localizedDescription)")
            }
        }
        for name in ["generation_config.json", "config.json"] {
            let url = directory.appendingPathComponent(name)
            guard manager.fileExists(atPath: url.path) else { continue }
            let value = try readJSON(url)["eos_token_id"]
            definition.eosIds += value?.array?.compactMap(\.int) ?? value?.int.map { [$0] } ?? []
        }
    }
}

extension TokenizerDefinition {
    /// The id of an added or model token, compared byte for byte.
    func id(of token: String) -> Int? {
        let utf8 = Array(token.utf8)
        if let added = addedTokens.first(where: { $0.content.utf8.elementsEqual(utf8) }) { return added.id }
        return modelTokens.firstIndex { $0?.utf8.elementsEqual(utf8) ?? false }
    }
}
