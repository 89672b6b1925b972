import Foundation

/// The on-disk cache layout of Python's `huggingface_hub`, for model repositories:
///
///     <root>/models--<org>--<name>/blobs/<etag>                 file contents, named by ETag (SHA-256 for LFS files)
///     <root>/models--<org>--<name>/blobs/<etag>.incomplete      a download in progress (resumable)
///     <root>/models--<org>--<name>/snapshots/<commit>/<file>    relative symlink to ../../blobs/<etag>
///     <root>/models--<org>--<name>/refs/<revision>              the commit a branch or tag pointed to
public struct HubCache: Sendable {
    /// The folder holding the `models--...` folders.
    public let root: URL

    public init(root: URL) { self.root = root }

    /// `models--org--name` for `org/name`.
    public func repositoryDirectory(_ repository: String) -> URL {
        let folder = "models--" + repository.split(separator: "/", omittingEmptySubsequences: false).joined(separator: "--")
        return root.appendingPathComponent(folder, isDirectory: true)
    }

    public func blobURL(_ repository: String, etag: String) -> URL {
        repositoryDirectory(repository).appendingPathComponent("blobs/\(etag)")
    }

    public func incompleteBlobURL(_ repository: String, etag: String) -> URL {
        repositoryDirectory(repository).appendingPathComponent("blobs/\(etag).incomplete")
    }

    public func snapshotDirectory(_ repository: String, commit: String) -> URL {
        repositoryDirectory(repository).appendingPathComponent("snapshots/\(commit)", isDirectory: true)
    }

    /// The file `refs/<revision>`; revisions such as `refs/pr/1` become nested folders as in Python.
    public func refURL(_ repository: String, revision: String) -> URL {
        repositoryDirectory(repository).appendingPathComponent("refs/\(revision)")
    }

    /// The commit a revision resolves to in the cache: itself if it is a cached commit hash,
    /// else the content of `refs/<revision>`.
    public func cachedCommit(_ repository: String, revision: String) -> String? {
        if Self.isCommitHash(revision),
            FileManager.default.fileExists(atPath: snapshotDirectory(repository, commit: revision).path)
        {
            return revision
        }
        guard let text = try? String(contentsOf: refURL(repository, revision: revision), encoding: .utf8) else {
            return nil
        }
        let commit = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return HubPathComponent.isSafe(commit) ? commit : nil
    }

    /// The snapshot's copy of `file` if its link resolves to an existing blob.
    public func cachedFile(_ repository: String, commit: String, file: String) -> URL? {
        let pointer = snapshotDirectory(repository, commit: commit).appendingPathComponent(file)
        // fileExists follows the symlink, so a link to a missing blob counts as absent.
        return FileManager.default.fileExists(atPath: pointer.path) ? pointer : nil
    }

    /// Records that `revision` points at `commit` (skipped when the revision is that commit).
    public func writeRef(_ repository: String, revision: String, commit: String) throws {
        guard revision != commit else { return }
        let url = refURL(repository, revision: revision)
        do {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(commit.utf8).write(to: url, options: .atomic)
        } catch {
            throw HubError.fileSystem(path: url.path, reason: error.localizedDescription)
        }
    }

    /// Makes `snapshots/<commit>/<file>` a relative symlink to `blobs/<etag>`, replacing any old link.
    public func link(_ repository: String, commit: String, file: String, etag: String) throws {
        let pointer = snapshotDirectory(repository, commit: commit).appendingPathComponent(file)
        let depth = file.split(separator: "/").count - 1
        let target = String(repeating: "../", count: depth + 2) + "blobs/\(etag)"
        let manager = FileManager.default
        do {
            try manager.createDirectory(at: pointer.deletingLastPathComponent(), withIntermediateDirectories: true)
            if (try? manager.destinationOfSymbolicLink(atPath: pointer.path)) != nil
                || manager.fileExists(atPath: pointer.path)
            {
                try manager.removeItem(at: pointer)
            }
            try manager.createSymbolicLink(atPath: pointer.path, withDestinationPath: target)
        } catch {
            throw HubError.fileSystem(path: pointer.path, reason: error.localizedDescription)
        }
    }

    /// True for a 40-character lowercase hexadecimal git commit hash.
    public static func isCommitHash(_ text: String) -> Bool {
        text.utf8.count == 40 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }
}

/// Checks that a name from the server (commit, ETag, file name) is safe to use inside the cache.
enum HubPathComponent {
    /// Letters, digits, `.`, `_`, `-`, not starting with `.`, at most 255 bytes.
    static func isSafe(_ text: String) -> Bool {
        guard let first = text.utf8.first, first != UInt8(ascii: "."), text.utf8.count <= 255 else { return false }
        return text.utf8.allSatisfy { byte in
            (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}
