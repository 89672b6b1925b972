import Foundation

/// Runs one answer at a time on its own thread, so that the prompt comes back as soon as Ctrl-C is
/// pressed even while a token is still being computed. After an interruption the worker's output
/// is muted; the caller waits for it to finish (`waitUntilIdle`) before touching the session again.
final class AnswerWorker: @unchecked Sendable {
    /// How waiting for an answer ended.
    enum Outcome { case finished, interrupted }

    /// Where the worker writes: standard output and error until muted.
    final class Output: @unchecked Sendable {
        private let lock = NSLock()
        private var muted = false

        func write(_ text: String) {
            lock.lock()
            defer { lock.unlock() }
            if !muted { Console.out(text) }
        }

        func writeError(_ text: String) {
            lock.lock()
            defer { lock.unlock() }
            if !muted { Console.err(text) }
        }

        /// After this returns, nothing more is written.
        func mute() {
            lock.lock()
            muted = true
            lock.unlock()
        }
    }

    private let queue = DispatchQueue(label: "phi-gpu.answer")
    private var running: DispatchSemaphore?

    /// Starts `work` on the worker thread; it writes through the `Output` it is given.
    func start(_ work: @escaping @Sendable (Output) -> Void) {
        let output = Output()
        let done = DispatchSemaphore(value: 0)
        running = done
        current = output
        queue.async {
            work(output)
            done.signal()
        }
    }

    private var current: Output?

    /// Waits until the answer is complete, or until `monitor` reports Ctrl-C (checked every 20 ms);
    /// on Ctrl-C the answer's output is muted and the worker is left to stop by itself.
    func waitUntilDone(orInterrupted monitor: InterruptMonitor) -> Outcome {
        guard let running else { return .finished }
        while running.wait(timeout: .now() + .milliseconds(20)) == .timedOut {
            if monitor.isSet {
                current?.mute()
                return .interrupted
            }
        }
        self.running = nil
        return .finished
    }

    /// Waits for an interrupted answer to stop.
    func waitUntilIdle() {
        running?.wait()
        running = nil
    }
}
