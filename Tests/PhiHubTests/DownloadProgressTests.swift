import Foundation
import XCTest

@testable import PhiHub

final class DownloadProgressTests: XCTestCase {
    let halfway = DownloadProgress(
        file: "model.safetensors", completedBytes: 1_000_000_000, totalBytes: 2_000_000_000,
        bytesPerSecond: 10_000_000, fileFinished: false)

    func testBarShowsSizeSpeedAndTimeLeft() {
        XCTAssertEqual(
            DownloadProgressPrinter.barLine(halfway, width: 10),
            "[#####-----]  50%  1.0 GB / 2.0 GB  10.0 MB/s  1m 40s left  model.safetensors")
        XCTAssertEqual(
            DownloadProgressPrinter.logLine(halfway),
            "model.safetensors: 1.0 GB / 2.0 GB (50%), 10.0 MB/s, 1m 40s left")
    }

    func testUnitsAndDurations() {
        XCTAssertEqual(ByteCountText.format(999), "999 B")
        XCTAssertEqual(ByteCountText.format(1536), "1.5 KB")
        XCTAssertEqual(ByteCountText.format(2_300_000_000_000), "2.3 TB")
        XCTAssertEqual(ByteCountText.duration(9.2), "10s")
        XCTAssertEqual(ByteCountText.duration(75), "1m 15s")
        XCTAssertEqual(ByteCountText.duration(3960), "1h 06m")
        XCTAssertNil(DownloadProgress(file: "a", completedBytes: 0, totalBytes: 5, bytesPerSecond: 0, fileFinished: false).secondsLeft)
    }

    func testTerminalRedrawsOneLineAndLogsOtherwise() {
        let terminalOutput = TextSink()
        let terminal = DownloadProgressPrinter(isTerminal: true, write: terminalOutput.append)
        terminal.report(halfway)
        var done = halfway
        done.completedBytes = done.totalBytes
        done.fileFinished = true
        terminal.report(done)
        XCTAssertEqual(
            terminalOutput.text,
            "\r" + DownloadProgressPrinter.barLine(halfway) + "\u{1B}[K" + "\r" + DownloadProgressPrinter.barLine(done)
                + "\u{1B}[K\n")

        let logOutput = TextSink()
        let log = DownloadProgressPrinter(isTerminal: false, logInterval: 3600, write: logOutput.append)
        log.report(halfway)
        log.report(halfway)  // within the interval: not logged again
        log.report(done)  // a finished file always is
        XCTAssertEqual(
            logOutput.text, DownloadProgressPrinter.logLine(halfway) + "\n" + DownloadProgressPrinter.logLine(done) + "\n")
    }
}

final class TextSink: @unchecked Sendable {
    private let lock = NSLock()
    private var parts: [String] = []
    func append(_ text: String) {
        lock.lock()
        parts.append(text)
        lock.unlock()
    }
    var text: String {
        lock.lock()
        defer { lock.unlock() }
        return parts.joined()
    }
}
