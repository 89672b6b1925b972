import Foundation

/// Measures encoding speed, for `phi-gpu bench` (compare with Scripts/tokenizer/bench_reference.py,
/// the Rust `tokenizers` library on the same text, single-threaded).
public struct TokenizerBenchmark: Sendable {
    public let tokenizer: Tokenizer

    public init(tokenizer: Tokenizer) { self.tokenizer = tokenizer }

    /// Encodes `text` (without special tokens, as plain text) repeatedly for at least
    /// `minimumSeconds` and returns the throughput in MB/s (10^6 bytes of UTF-8 input per second).
    public func encodeThroughput(text: String, minimumSeconds: Double = 1) -> Double {
        let bytes = Double(text.utf8.count)
        var runs = 0
        var tokens = 0
        let clock = ContinuousClock()
        let start = clock.now
        var elapsed = 0.0
        repeat {
            tokens &+= tokenizer.encode(text, addSpecialTokens: false, parseSpecial: false).count
            runs += 1
            let duration = clock.now - start
            elapsed = Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
        } while elapsed < minimumSeconds
        precondition(tokens >= 0)  // keeps the work from being optimised away
        return bytes * Double(runs) / elapsed / 1e6
    }
}
