import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A whole file memory-mapped read-only; the mapping lives as long as this object.
/// Used as the `owner` of `TensorStorage` views into checkpoint files.
public final class MappedFile: @unchecked Sendable {
    public let url: URL
    /// The file's bytes (count = file size).
    public let bytes: UnsafeRawBufferPointer

    public init(url: URL) throws {
        self.url = url
        let fd = open(url.path, O_RDONLY)
        guard fd >= 0 else {
            throw FormatError(file: url, "cannot open (\(String(cString: strerror(errno)))); check that the path exists and is readable")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw FormatError(file: url, "cannot stat (\(String(cString: strerror(errno))))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw FormatError(file: url, "is not a regular file")
        }
        let size = Int(info.st_size)
        guard size > 0 else { throw FormatError(file: url, "is empty; the download may have failed, fetch it again") }
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0), base != MAP_FAILED else {
            throw FormatError(file: url, "cannot memory-map \(size) bytes (\(String(cString: strerror(errno))))")
        }
        bytes = UnsafeRawBufferPointer(start: UnsafeRawPointer(base), count: size)
    }

    deinit {
        if let base = bytes.baseAddress { munmap(UnsafeMutableRawPointer(mutating: base), bytes.count) }
    }

    /// A view of `count` bytes at `offset`, kept alive by this mapping; the range must have been checked.
    public func storage(offset: Int, count: Int) -> TensorStorage {
        TensorStorage(owner: self, bytes: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + count)]))
    }
}
