import ArgumentParser
import Foundation
import PhiTokenizer

/// `phi-gpu bench tokenizer`: encoding speed in MB/s on 1 MB of English and 1 MB of mixed scripts.
struct BenchTokenizer: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokenizer",
        abstract: "Encoding speed of a model's tokenizer, in MB of text per second.",
        discussion: """
            Encodes 1 MB of English and 1 MB of mixed-script text (generated deterministically, or \
            read from --english and --mixed, e.g. the files Scripts/tokenizer/bench_text.py writes) \
            on one thread, repeatedly for at least --seconds, and reports MB/s and tokens per byte.

            Examples:
              phi-gpu bench tokenizer
              phi-gpu bench tokenizer --model phi-4-mini --output json
              phi-gpu bench tokenizer --english .build-bench/english.txt --mixed .build-bench/mixed.txt
            """)

    @OptionGroup(title: "Model") var model: ModelOptions

    @Option(help: ArgumentHelp("English text file to encode instead of the generated one.", valueName: "file"))
    var english: String?

    @Option(help: ArgumentHelp("Mixed-script text file to encode instead of the generated one.", valueName: "file"))
    var mixed: String?

    @Option(help: "Least time spent encoding each text.")
    var seconds: Double = 1

    @Option(help: "table, json or csv.")
    var output: BenchOutputFormat = .table

    func validate() throws {
        guard seconds.isFinite, seconds > 0, seconds <= 600 else {
            throw ValidationError("--seconds must be more than 0 and at most 600 (got \(seconds)).")
        }
        for path in [english, mixed].compactMap({ $0 }) where !FileManager.default.isReadableFile(atPath: path) {
            throw ValidationError("cannot read \(path); give an existing text file.")
        }
    }

    /// One measured text.
    struct Row: Encodable {
        var text: String
        var bytes: Int
        var tokens: Int
        var megabytesPerSecond: Double
    }

    func run() async throws {
        let tokenizer = try await ModelLoading.tokenizer(model)
        let texts: [(String, String)] = [
            ("english", try english.map(Self.read) ?? BenchmarkText.english(byteCount: 1_000_000)),
            ("mixed", try mixed.map(Self.read) ?? BenchmarkText.mixed(byteCount: 1_000_000)),
        ]
        let benchmark = TokenizerBenchmark(tokenizer: tokenizer)
        let rows = texts.map { name, text in
            Row(text: name, bytes: text.utf8.count,
                tokens: tokenizer.encode(text, addSpecialTokens: false).count,
                megabytesPerSecond: benchmark.encodeThroughput(text: text, minimumSeconds: seconds))
        }
        switch output {
        case .json: try JSONOutput.print(rows)
        case .csv:
            Console.out(TableText.csv(header: ["text", "bytes", "tokens", "megabytes_per_second"],
                                      rows: rows.map { [$0.text, "\($0.bytes)", "\($0.tokens)", String(format: "%.3f", $0.megabytesPerSecond)] }))
        case .table:
            Console.out(TableText.markdown(
                header: ["text", "bytes", "tokens", "MB/s"],
                rows: rows.map { [$0.text, "\($0.bytes)", "\($0.tokens)", String(format: "%.2f", $0.megabytesPerSecond)] },
                rightAligned: [1, 2, 3]))
        }
    }

    private static func read(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else { throw CommandFailure("cannot read \(path)") }
        return String(decoding: data, as: UTF8.self)
    }
}

/// Deterministic benchmark texts: English-like prose from a fixed word list, and the same prose
/// interleaved with sentences in other scripts, numbers, code and emoji.
enum BenchmarkText {
    private static let words = """
        the of and to in a is that for it as was with be by on not he this are or his from at which but have an \
        they you were her she there been one all we their has would when if so no will more can out other into \
        some time could them than only new after first also two like about over most such through model engine \
        memory before people years work well way even because good each those any these great where much right \
        system should world state still between under last never another while might number part small place \
        water large found every light question kernel answer during without again often always point however \
        government city country family school important different example several together against following
        """.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)

    private static let otherScripts = [
        "机器学习模型在图形处理器上运行得更快。", "今日はいい天気ですね、散歩に行きましょう。", "한국어 문장도 토큰으로 나뉩니다.",
        "Быстрая коричневая лиса перепрыгивает через ленивую собаку.", "مرحبا بالعالم، هذه جملة عربية للاختبار.",
        "नमस्ते दुनिया, यह एक परीक्षण वाक्य है।", "Γειά σου κόσμε, αυτή είναι μια δοκιμή.", "שלום עולם, זה משפט בדיקה.",
        "Ça coûte 12,50 € — déjà vu, naïve façade!", "Größe: 3×4 m², Straße 17.", "🙂🚀✨ emoji 👩‍💻 and 🇫🇷 flags",
        "func add(_ a: Int, _ b: Int) -> Int { return a + b }", "for (int i = 0; i < n; ++i) { sum += x[i]; }",
        "3.14159 2.71828 1e-5 0x1F 42 1,000,000", "ไทย: สวัสดีชาวโลก", "Tiếng Việt có dấu: xin chào thế giới.",
    ]

    /// About `byteCount` bytes of English-like sentences (cut at a character boundary).
    static func english(byteCount: Int, seed: UInt64 = 7) -> String {
        var random = seed
        var text = ""
        text.reserveCapacity(byteCount + 200)
        while text.utf8.count < byteCount { text += sentence(&random) + (next(&random) % 6 == 0 ? "\n\n" : " ") }
        return cut(text, to: byteCount)
    }

    /// About `byteCount` bytes: English sentences with one in three replaced by another script.
    static func mixed(byteCount: Int, seed: UInt64 = 11) -> String {
        var random = seed
        var text = ""
        text.reserveCapacity(byteCount + 200)
        while text.utf8.count < byteCount {
            text += next(&random) % 3 == 0 ? otherScripts[Int(next(&random) % UInt64(otherScripts.count))] : sentence(&random)
            text += next(&random) % 5 == 0 ? "\n" : " "
        }
        return cut(text, to: byteCount)
    }

    private static func sentence(_ random: inout UInt64) -> String {
        let count = 6 + Int(next(&random) % 14)
        var parts: [String] = []
        for index in 0..<count {
            var word = words[Int(next(&random) % UInt64(words.count))]
            if index == 0 { word = word.prefix(1).uppercased() + word.dropFirst() }
            if index < count - 1 && next(&random) % 9 == 0 { word += "," }
            parts.append(word)
        }
        return parts.joined(separator: " ") + (next(&random) % 7 == 0 ? "?" : ".")
    }

    /// The first `byteCount` bytes of `text`, less an unfinished last character.
    private static func cut(_ text: String, to byteCount: Int) -> String {
        var bytes = Array(text.utf8.prefix(byteCount))
        while let last = bytes.last, last & 0xC0 == 0x80 { bytes.removeLast() }
        if let last = bytes.last, last >= 0xC0 { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// SplitMix64 step.
    private static func next(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
