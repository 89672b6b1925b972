import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// How far a snapshot download has come, across all of its files.
public struct DownloadProgress: Sendable, Equatable {
    /// The file being downloaded now (its name in the repository).
    public var file: String
    /// Bytes of all files to download that are on disk, including bytes resumed from earlier runs.
    public var completedBytes: Int64
    /// Bytes of all files to download.
    public var totalBytes: Int64
    /// Average speed of this run's transfer, in bytes per second.
    public var bytesPerSecond: Double
    /// True once `file` is complete and checked.
    public var fileFinished: Bool

    public init(file: String, completedBytes: Int64, totalBytes: Int64, bytesPerSecond: Double, fileFinished: Bool) {
        self.file = file
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
        self.bytesPerSecond = bytesPerSecond
        self.fileFinished = fileFinished
    }

    /// Completed fraction in 0...1 (1 when there is nothing to download).
    public var fraction: Double {
        totalBytes > 0 ? min(1, max(0, Double(completedBytes) / Double(totalBytes))) : 1
    }

    /// Seconds until done at the current speed, or nil while the speed is unknown.
    public var secondsLeft: Double? {
        guard bytesPerSecond > 0 else { return nil }
        return Double(max(0, totalBytes - completedBytes)) / bytesPerSecond
    }
}

/// Human-readable sizes, speeds and durations for progress output.
public enum ByteCountText {
    /// `1536` -> `1.5 KB`; decimal units as the hub's web pages use.
    public static func format(_ bytes: Int64) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(max(0, bytes))
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(Int(value)) B" : String(format: "%.1f", value) + " " + units[unit]
    }

    /// `75` -> `1m 15s`, `4000` -> `1h 06m`.
    public static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "--" }
        let total = Int(seconds.rounded(.up))
        if total < 60 { return "\(total)s" }
        if total < 3600 { return "\(total / 60)m \(String(format: "%02d", total % 60))s" }
        return "\(total / 3600)h \(String(format: "%02d", total % 3600 / 60))m"
    }
}

/// Shows download progress on standard error: a redrawn bar with size, speed and time left when
/// standard error is a terminal, otherwise occasional plain log lines (one per finished file, and
/// at most one every `logInterval` seconds in between).
public final class DownloadProgressPrinter: @unchecked Sendable {
    private let isTerminal: Bool
    private let write: @Sendable (String) -> Void
    private let logInterval: Double
    private let lock = NSLock()
    private var lastLogTime: Double = -Double.infinity
    private var barShown = false

    /// - Parameters:
    ///   - isTerminal: draw a bar (default: whether standard error is a terminal).
    ///   - write: where text goes (default: standard error).
    public init(
        isTerminal: Bool = isatty(STDERR_FILENO) == 1,
        logInterval: Double = 5,
        write: @escaping @Sendable (String) -> Void = { text in FileHandle.standardError.write(Data(text.utf8)) }
    ) {
        self.isTerminal = isTerminal
        self.logInterval = logInterval
        self.write = write
    }

    /// Call with each progress report; thread-safe.
    public func report(_ progress: DownloadProgress) {
        lock.lock()
        defer { lock.unlock() }
        if isTerminal {
            write("\r" + Self.barLine(progress) + "\u{1B}[K")
            barShown = true
            if progress.fileFinished && progress.completedBytes >= progress.totalBytes {
                write("\n")
                barShown = false
            }
        } else {
            let now = ProcessInfo.processInfo.systemUptime
            if progress.fileFinished || now - lastLogTime >= logInterval {
                lastLogTime = now
                write(Self.logLine(progress) + "\n")
            }
        }
    }

    /// Ends a bar line left open (after an error, say).
    public func finish() {
        lock.lock()
        defer { lock.unlock() }
        if barShown { write("\n") }
        barShown = false
    }

    /// `[##########----------]  50%  1.0 GB / 2.0 GB  10.0 MB/s  1m 40s left  model.safetensors`
    public static func barLine(_ progress: DownloadProgress, width: Int = 24) -> String {
        let filled = Int((progress.fraction * Double(width)).rounded(.down))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let percent = String(format: "%3d%%", Int((progress.fraction * 100).rounded(.down)))
        return "[\(bar)] \(percent)  \(sizeAndSpeed(progress))  \(progress.file)"
    }

    /// `model.safetensors: 1.0 GB / 2.0 GB (50%), 10.0 MB/s, 1m 40s left`
    public static func logLine(_ progress: DownloadProgress) -> String {
        let percent = Int((progress.fraction * 100).rounded(.down))
        let state = progress.fileFinished ? "done, " : ""
        return "\(progress.file): \(state)\(ByteCountText.format(progress.completedBytes)) / "
            + "\(ByteCountText.format(progress.totalBytes)) (\(percent)%), "
            + "\(ByteCountText.format(Int64(progress.bytesPerSecond)))/s, "
            + "\(progress.secondsLeft.map(ByteCountText.duration) ?? "--") left"
    }

    private static func sizeAndSpeed(_ progress: DownloadProgress) -> String {
        "\(ByteCountText.format(progress.completedBytes)) / \(ByteCountText.format(progress.totalBytes))  "
            + "\(ByteCountText.format(Int64(progress.bytesPerSecond)))/s  "
            + "\(progress.secondsLeft.map(ByteCountText.duration) ?? "--") left"
    }
}
