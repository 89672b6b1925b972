import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Catches Ctrl-C (SIGINT) instead of dying: a flag the generation loop checks between tokens.
final class InterruptMonitor: @unchecked Sendable {
    private let lock = NSLock()
    private var interrupted = false
    private var source: DispatchSourceSignal?

    /// Starts catching SIGINT.
    func install() {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: DispatchQueue.global())
        source.setEventHandler { [weak self] in self?.set() }
        source.resume()
        self.source = source
    }

    /// Restores the default Ctrl-C (the process ends).
    func uninstall() {
        source?.cancel()
        source = nil
        signal(SIGINT, SIG_DFL)
    }

    /// True once Ctrl-C was pressed since the last `clear()`.
    var isSet: Bool {
        lock.lock()
        defer { lock.unlock() }
        return interrupted
    }

    func set() {
        lock.lock()
        interrupted = true
        lock.unlock()
    }

    func clear() {
        lock.lock()
        interrupted = false
        lock.unlock()
    }
}
