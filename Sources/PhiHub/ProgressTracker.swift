import Foundation

/// Turns byte counts of a snapshot download into `DownloadProgress` reports: the total over all
/// files, this run's average speed, and at most about ten reports a second (plus one per finished
/// file). Used by one downloading task at a time.
final class ProgressTracker {
    private let totalBytes: Int64
    private let callback: (@Sendable (DownloadProgress) -> Void)?
    /// Bytes of finished files, plus whatever earlier runs left of files not yet started.
    private var doneBeforeFile: Int64
    private var fileBytes: Int64 = 0
    private var file = ""
    private var transferred: Int64 = 0
    private let start = ContinuousClock.now
    private var lastReport: ContinuousClock.Instant?
    private let interval = Duration.milliseconds(100)

    /// `alreadyDone`: bytes on disk from earlier runs' partial downloads.
    init(totalBytes: Int64, alreadyDone: Int64, callback: (@Sendable (DownloadProgress) -> Void)?) {
        self.totalBytes = totalBytes
        self.doneBeforeFile = alreadyDone
        self.callback = callback
    }

    /// A file begins (or restarts) with `bytesOnDisk` bytes already there.
    func startFile(_ name: String, bytesOnDisk: Int64) {
        if name != file {
            // Its partial bytes were counted in `alreadyDone`; move them into this file's count.
            doneBeforeFile -= bytesOnDisk
            file = name
        }
        fileBytes = bytesOnDisk
    }

    func advance(bytesOnDisk: Int64, transferred count: Int64) {
        fileBytes = bytesOnDisk
        transferred += count
        let now = ContinuousClock.now
        if let lastReport, now - lastReport < interval { return }
        lastReport = now
        report(finished: false)
    }

    func finishFile(bytesOnDisk: Int64) {
        fileBytes = bytesOnDisk
        report(finished: true)
        doneBeforeFile += bytesOnDisk
        fileBytes = 0
    }

    private func report(finished: Bool) {
        guard let callback else { return }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        callback(
            DownloadProgress(
                file: file, completedBytes: doneBeforeFile + fileBytes, totalBytes: totalBytes,
                bytesPerSecond: seconds > 0 ? Double(transferred) / seconds : 0, fileFinished: finished))
    }
}
