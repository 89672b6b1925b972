import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writing to standard output and error without buffering surprises, and whether they are terminals.
enum Console {
    static var stdinIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }
    static var stdoutIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
    static var stderrIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }

    /// Writes `text` to standard output at once (answers stream token by token).
    static func out(_ text: String) {
        writeAll(STDOUT_FILENO, text)
    }

    /// Writes `text` to standard error at once.
    static func err(_ text: String) {
        writeAll(STDERR_FILENO, text)
    }

    /// One line on standard error.
    static func note(_ line: String) { err(line + "\n") }

    private static func writeAll(_ descriptor: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeMutableBytes { buffer in
                write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return  // a closed pipe: nothing more can be shown
            }
            offset += written
        }
        bytes.removeAll()
    }
}

/// Progress of a long step (reading weights, GPU upload) on standard error: a redrawn bar on a
/// terminal, otherwise a log line at the start, every 25 % and at the end.
final class ProgressLine: @unchecked Sendable {
    private let label: String
    private let isTerminal: Bool
    private let lock = NSLock()
    private var lastPercent = -1
    private var finished = false

    init(_ label: String, isTerminal: Bool = Console.stderrIsTerminal) {
        self.label = label
        self.isTerminal = isTerminal
    }

    /// Reports `fraction` (0...1) done; thread-safe.
    func update(_ fraction: Double) {
        lock.lock()
        defer { lock.unlock() }
        guard !finished else { return }
        let percent = Int((min(max(fraction, 0), 1) * 100).rounded(.down))
        if isTerminal {
            guard percent != lastPercent else { return }
            lastPercent = percent
            let width = 24
            let filled = percent * width / 100
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            Console.err("\r[\(bar)] \(String(format: "%3d%%", percent))  \(label)\u{1B}[K")
        } else {
            let step = percent / 25 * 25
            guard step > lastPercent else { return }
            lastPercent = step
            Console.note("\(label): \(step)%")
        }
    }

    /// Ends the bar (or logs completion).
    func finish() {
        lock.lock()
        defer { lock.unlock() }
        guard !finished else { return }
        finished = true
        if isTerminal {
            if lastPercent >= 0 { Console.err("\r\u{1B}[K") }
        } else if lastPercent < 100 {
            Console.note("\(label): 100%")
        }
    }
}
