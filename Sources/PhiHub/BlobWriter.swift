import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Appends downloaded bytes to a `blobs/<etag>.incomplete` file and hashes them as they go, so a
/// resumed download is checked over the whole file without reading it twice. Write errors become
/// `HubError`s naming the file (`ENOSPC` becomes `.diskFull`).
final class BlobWriter {
    let url: URL
    private let descriptor: Int32
    /// Bytes in the file (all hashed).
    private(set) var byteCount: Int64 = 0
    private var hasher = SHA256()

    /// Opens (creating if needed) `url` and hashes what an earlier run left there.
    init(url: URL) throws {
        self.url = url
        let fd = open(url.path, O_RDWR | O_CREAT, 0o644)
        guard fd >= 0 else { throw Self.error(errno, path: url.path) }
        // One writer per blob, across processes too: a second `phi-gpu download` must not append.
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            throw code == EWOULDBLOCK
                ? HubError.fileSystem(
                    path: url.path, reason: "another process is downloading this file; wait for it to finish")
                : Self.error(code, path: url.path)
        }
        descriptor = fd
        try hashExistingContent()
    }

    deinit { close(descriptor) }

    /// Discards the content (the server ignored our Range request, or sent a different start).
    func truncate() throws {
        guard ftruncate(descriptor, 0) == 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
            throw Self.error(errno, path: url.path)
        }
        byteCount = 0
        hasher = SHA256()
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        guard var cursor = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0 {
            let written = write(descriptor, cursor, remaining)
            if written < 0 {
                if errno == EINTR { continue }
                throw Self.error(errno, path: url.path)
            }
            cursor += written
            remaining -= written
        }
        hasher.update(bytes)
        byteCount += Int64(bytes.count)
    }

    /// Flushes to disk and returns the SHA-256 of the whole file as lowercase hex.
    func finish() throws -> String {
        guard fsync(descriptor) == 0 else { throw Self.error(errno, path: url.path) }
        return hasher.finalizeHex()
    }

    private func hashExistingContent() throws {
        guard lseek(descriptor, 0, SEEK_SET) == 0 else { throw Self.error(errno, path: url.path) }
        // (1 MiB,) UInt8 read buffer.
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { chunk.deallocate() }
        while true {
            let count = read(descriptor, chunk.baseAddress, chunk.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.error(errno, path: url.path)
            }
            if count == 0 { break }
            hasher.update(UnsafeRawBufferPointer(rebasing: chunk[0..<count]))
            byteCount += Int64(count)
        }
    }

    static func error(_ code: Int32, path: String) -> HubError {
        if code == ENOSPC || code == EDQUOT {
            return .diskFull(path: path, neededBytes: nil, availableBytes: nil)
        }
        return .fileSystem(path: path, reason: String(cString: strerror(code)))
    }

    /// Free bytes for an unprivileged user on the file system holding `url`, or nil if unknown.
    static func availableBytes(at url: URL) -> Int64? {
        var stats = statvfs()
        guard statvfs(url.path, &stats) == 0 else { return nil }
        return Int64(stats.f_bavail) * Int64(stats.f_frsize)
    }
}
