import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Executables the build put beside the test bundle, and running them.
///
/// Processes are started with `posix_spawn` and reaped with `waitpid`, not with Foundation's
/// `Process`: its `waitUntilExit` can miss a child's exit on Linux and wait forever (seen in CI,
/// with the exited child left a zombie), which hangs the whole test run.
public enum Executables {
    /// What one run printed and returned.
    public struct Result: Sendable {
        /// The exit status, or 128 + the signal number when a signal ended the process.
        public var status: Int32
        public var stdout: Data
        public var stderr: Data
        /// Whether the run was killed because it outlasted its timeout.
        public var timedOut: Bool
    }

    /// The built executable `name` beside the bundle containing `marker` (the build directory).
    public static func built(_ name: String, besideBundleOf marker: AnyClass) throws -> URL {
        let bundle = Bundle(for: marker).bundleURL
        let candidates = [bundle, bundle.deletingLastPathComponent()].map { $0.appendingPathComponent(name) }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw MissingTestData(description: "\(name) not found beside \(bundle.path); run swift build first")
        }
        return found
    }

    /// Runs `executable arguments…` to its end: exit status and standard output and error together.
    public static func run(_ executable: URL, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let result = try spawn(executable, arguments, mergeStandardError: true)
        return (result.status, String(decoding: result.stdout, as: UTF8.self))
    }

    /// Runs `executable arguments…` with `stdin` written to its standard input (then closed), the
    /// environment `environment` (the test's own when nil), and kills it after `timeout` seconds.
    public static func spawn(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
                             stdin: Data = Data(), mergeStandardError: Bool = false,
                             timeout: TimeInterval = 600) throws -> Result {
        signal(SIGPIPE, SIG_IGN)  // a child that exits before reading all of stdin must not end the tests
        let input = try PipePair(), output = try PipePair(), errors = try PipePair()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input.read, 0)
        posix_spawn_file_actions_adddup2(&actions, output.write, 1)
        posix_spawn_file_actions_adddup2(&actions, mergeStandardError ? output.write : errors.write, 2)

        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        let env = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + env).forEach { free($0) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable.path, &actions, nil, argv, env)
        input.closeRead(); output.closeWrite(); errors.closeWrite()
        guard spawned == 0 else {
            input.closeWrite(); output.closeRead(); errors.closeRead()
            throw MissingTestData(description: "could not start \(executable.path): \(String(cString: strerror(spawned)))")
        }

        var result = Result(status: -1, stdout: Data(), stderr: Data(), timedOut: false)
        let deadline = Date().addingTimeInterval(timeout)
        var pending = stdin
        if pending.isEmpty { input.closeWrite() }
        // Feed stdin and drain stdout and stderr together, so that no pipe fills up and blocks the child.
        while output.read >= 0 || errors.read >= 0 {
            var fds = [pollfd(fd: output.read, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: errors.read, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: input.write, events: Int16(POLLOUT), revents: 0)]
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 {
                kill(pid, SIGKILL)
                result.timedOut = true
                break
            }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(remaining, 1) * 1000))
            if ready < 0 && errno != EINTR { break }
            if fds[0].revents != 0 { drain(output, into: &result.stdout) }
            if fds[1].revents != 0 { drain(errors, into: &result.stderr) }
            if fds[2].revents != 0 {
                let written = pending.withUnsafeBytes { Glibc.write(input.write, $0.baseAddress, min($0.count, 65536)) }
                if written > 0 { pending.removeFirst(written) }
                if written < 0 || pending.isEmpty { input.closeWrite() }
            }
        }
        input.closeWrite(); output.closeRead(); errors.closeRead()
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7f
        result.status = signal == 0 ? (status >> 8) & 0xff : 128 + signal
        return result
    }

    /// Reads what is available from `pipe`, closing it at its end.
    private static func drain(_ pipe: PipePair, into data: inout Data) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(pipe.read, $0.baseAddress, $0.count) }
        if count > 0 { data.append(contentsOf: buffer[0..<count]) } else if count == 0 || errno != EINTR { pipe.closeRead() }
    }

    /// Both ends of a pipe, close-on-exec so that no other child inherits them; a closed end is -1.
    private final class PipePair {
        private(set) var read: Int32
        private(set) var write: Int32

        init() throws {
            var fds: [Int32] = [-1, -1]
            guard pipe(&fds) == 0 else { throw MissingTestData(description: "pipe failed: errno \(errno)") }
            (read, write) = (fds[0], fds[1])
            _ = fcntl(read, F_SETFD, FD_CLOEXEC)
            _ = fcntl(write, F_SETFD, FD_CLOEXEC)
        }

        func closeRead() { if read >= 0 { close(read); read = -1 } }
        func closeWrite() { if write >= 0 { close(write); write = -1 } }
        deinit { closeRead(); closeWrite() }
    }
}
