import AsyncHTTPClient
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Fetches the files a model needs from a Hugging Face hub repository into the `huggingface_hub`
/// cache and returns the snapshot folder (`.../snapshots/<commit>`) that a loader reads.
///
/// Large files are resumed with HTTP `Range` after a broken connection, checked against the
/// SHA-256 the hub reports, and only then moved into `blobs/` and linked from the snapshot, so a
/// corrupted or interrupted download never leaves a file that loads. With `HF_HUB_OFFLINE=1` the
/// network is never touched.
public struct HubClient: Sendable {
    public var configuration: HubConfiguration
    public var retryPolicy: RetryPolicy
    /// Connection-establishment limit, in seconds.
    public var connectTimeout: Int64 = 10
    /// Longest silence while reading an answer, in seconds, before the attempt counts as failed.
    public var readTimeout: Int64 = 60
    /// Which repository files to fetch.
    public var fileFilter: @Sendable (String) -> Bool = ModelFiles.isNeeded
    /// Free bytes at a path (tests replace it to simulate a full disk).
    var availableBytes: @Sendable (URL) -> Int64? = BlobWriter.availableBytes

    public init(configuration: HubConfiguration, retryPolicy: RetryPolicy = RetryPolicy()) {
        self.configuration = configuration
        self.retryPolicy = retryPolicy
    }

    public var cache: HubCache { HubCache(root: configuration.cacheDirectory) }

    /// Downloads (or finds cached) the model files of `repository` at `revision` and returns the
    /// snapshot folder. `progress` is called from the downloading task, about ten times a second
    /// and at the end of each file.
    public func snapshot(
        repository: String, revision: String = "main",
        progress: (@Sendable (DownloadProgress) -> Void)? = nil
    ) async throws -> URL {
        guard ModelRegistry.isValidRepositoryID(repository) else {
            throw HubError.invalidConfiguration("'\(repository)' is not a hub repository id of the form org/name")
        }
        try ModelRegistry.validateRevision(revision)
        if configuration.offline { return try cachedSnapshot(repository: repository, revision: revision) }
        let timeout = HTTPClient.Configuration.Timeout(connect: .seconds(connectTimeout), read: .seconds(readTimeout))
        var httpConfiguration = HTTPClient.Configuration(redirectConfiguration: .disallow, timeout: timeout)
        // Failed connections come back at once; `retryPolicy` decides about retrying them.
        httpConfiguration.connectionPool.retryConnectionEstablishment = false
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        let transport = HubTransport(http: http, configuration: configuration, retryPolicy: retryPolicy)
        do {
            let folder = try await download(repository: repository, revision: revision, transport: transport, progress: progress)
            try? await http.shutdown()
            return folder
        } catch {
            try? await http.shutdown()
            throw error
        }
    }

    /// The cached snapshot of `repository` at `revision`, without the network. Throws
    /// `.notCachedOffline` unless it holds `config.json`, weights, and every shard its index names.
    public func cachedSnapshot(repository: String, revision: String = "main") throws -> URL {
        let missing = HubError.notCachedOffline(
            repository: repository, revision: revision, cacheDirectory: configuration.cacheDirectory.path)
        guard let commit = cache.cachedCommit(repository, revision: revision) else { throw missing }
        let folder = cache.snapshotDirectory(repository, commit: commit)
        guard cache.cachedFile(repository, commit: commit, file: "config.json") != nil,
            let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path),
            names.contains(where: { $0.hasSuffix(".safetensors") })
        else { throw missing }
        for name in names where cache.cachedFile(repository, commit: commit, file: name) == nil { throw missing }
        if let index = cache.cachedFile(repository, commit: commit, file: "model.safetensors.index.json") {
            for shard in Self.shardNames(inIndex: index)
            where cache.cachedFile(repository, commit: commit, file: shard) == nil {
                throw missing
            }
        }
        return folder
    }

    private func download(
        repository: String, revision: String, transport: HubTransport,
        progress: (@Sendable (DownloadProgress) -> Void)?
    ) async throws -> URL {
        let (commit, allFiles) = try await transport.revisionInfo(repository: repository, revision: revision)
        let files = allFiles.filter { fileFilter($0) && HubPathComponent.isSafe($0) }.sorted()
        guard files.contains("config.json") else {
            throw HubError.malformedResponse(
                url: "\(configuration.endpoint.absoluteString)/\(repository)",
                reason: "\(repository) at '\(revision)' has no config.json, so it is not a model checkpoint")
        }
        let missing = files.filter { cache.cachedFile(repository, commit: commit, file: $0) == nil }
        var remotes: [RemoteFile] = []
        for file in missing {
            remotes.append(try await transport.metadata(repository: repository, commit: commit, file: file))
        }
        let tracker = try prepareBlobs(repository: repository, remotes: remotes, progress: progress)
        for remote in remotes {
            let blob = cache.blobURL(repository, etag: remote.etag)
            if !FileManager.default.fileExists(atPath: blob.path) {
                try await fetchBlob(remote, repository: repository, transport: transport, tracker: tracker)
            }
            try cache.link(repository, commit: commit, file: remote.name, etag: remote.etag)
        }
        try cache.writeRef(repository, revision: revision, commit: commit)
        return cache.snapshotDirectory(repository, commit: commit)
    }

    /// Creates `blobs/`, counts what is left to fetch, and checks that it fits on the disk.
    private func prepareBlobs(
        repository: String, remotes: [RemoteFile], progress: (@Sendable (DownloadProgress) -> Void)?
    ) throws -> ProgressTracker {
        let blobs = cache.repositoryDirectory(repository).appendingPathComponent("blobs", isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: blobs, withIntermediateDirectories: true)
        } catch {
            throw HubError.fileSystem(path: blobs.path, reason: error.localizedDescription)
        }
        var total: Int64 = 0
        var resumed: Int64 = 0
        var seen = Set<String>()
        for remote in remotes where seen.insert(remote.etag).inserted {
            guard !FileManager.default.fileExists(atPath: cache.blobURL(repository, etag: remote.etag).path) else {
                continue
            }
            total += remote.size ?? 0
            let partial = cache.incompleteBlobURL(repository, etag: remote.etag)
            let attributes = try? FileManager.default.attributesOfItem(atPath: partial.path)
            resumed += (attributes?[.size] as? NSNumber)?.int64Value ?? 0
        }
        if let available = availableBytes(blobs), available < total - resumed {
            throw HubError.diskFull(path: blobs.path, neededBytes: total - resumed, availableBytes: available)
        }
        return ProgressTracker(totalBytes: total, alreadyDone: resumed, callback: progress)
    }

    /// Downloads one blob into `blobs/<etag>.incomplete` (resuming what is there), checks its size
    /// and SHA-256, and renames it to `blobs/<etag>`. A failed check deletes the partial file.
    private func fetchBlob(
        _ remote: RemoteFile, repository: String, transport: HubTransport, tracker: ProgressTracker
    ) async throws {
        let partial = cache.incompleteBlobURL(repository, etag: remote.etag)
        let writer = try BlobWriter(url: partial)
        tracker.startFile(remote.name, bytesOnDisk: writer.byteCount)
        var lastReason = "no attempt made"
        var attempt = 0
        var attemptsInAll = 0
        var completed = false
        var offset: Int64 = -1
        transfer: while attempt < retryPolicy.maxAttempts {
            // An attempt that moved the download forward does not count against the limit.
            if writer.byteCount > offset, offset >= 0 { attempt = 0 }
            attempt += 1
            attemptsInAll += 1
            if attemptsInAll > 1 { try await retryPolicy.wait(beforeRetry: attempt) }
            if let size = remote.size {
                if writer.byteCount == size {
                    completed = true
                    break transfer
                }
                if writer.byteCount > size { try writer.truncate() }
            }
            offset = writer.byteCount
            do {
                let (response, url) = try await transport.getFile(
                    remote.downloadURL, rangeStart: offset, repository: repository, file: remote.name)
                let status = Int(response.status.code)
                if status == 206, Self.rangeStart(response.headers.first(name: "Content-Range")) != offset {
                    try writer.truncate()
                    lastReason = "the server resumed at a different byte than asked"
                    continue transfer
                }
                if status == 416, offset > 0, remote.size == nil {
                    completed = true
                    break transfer
                }
                if status == 416 || (status == 200 && offset > 0) { try writer.truncate() }
                if status == 416 || HubTransport.isRetryableStatus(status) {
                    lastReason = "HTTP \(status)"
                    if HubTransport.isRetryableStatus(status), attempt == retryPolicy.maxAttempts {
                        throw HubError.serverError(url: url, status: status)
                    }
                    continue transfer
                }
                try transport.check(response, url: url, repository: repository, file: remote.name)
                tracker.startFile(remote.name, bytesOnDisk: writer.byteCount)
                for try await buffer in response.body {
                    try buffer.withUnsafeReadableBytes { try writer.append($0) }
                    tracker.advance(bytesOnDisk: writer.byteCount, transferred: Int64(buffer.readableBytes))
                }
                if let size = remote.size, writer.byteCount < size {
                    lastReason = "the connection closed after \(writer.byteCount) of \(size) bytes"
                    continue transfer
                }
                completed = true
                break transfer
            } catch let error as HubError {
                if case .unreachable(_, let reason) = error {
                    lastReason = reason
                    continue transfer
                }
                throw error
            } catch let error as CancellationError {
                throw error
            } catch {
                lastReason = HubTransport.describe(error)
            }
        }
        guard completed else {
            throw HubError.downloadInterrupted(
                file: remote.name, url: remote.downloadURL, attempts: attemptsInAll, reason: lastReason)
        }
        try verifyAndMove(remote, writer: writer, partial: partial, repository: repository)
        tracker.finishFile(bytesOnDisk: writer.byteCount)
    }

    private func verifyAndMove(_ remote: RemoteFile, writer: BlobWriter, partial: URL, repository: String) throws {
        let digest = try writer.finish()
        if let size = remote.size, writer.byteCount != size {
            try? FileManager.default.removeItem(at: partial)
            throw HubError.sizeMismatch(
                file: remote.name, url: remote.downloadURL, expected: size, actual: writer.byteCount)
        }
        let expected = remote.etag.lowercased()
        if Self.isSHA256Hex(expected), digest != expected {
            try? FileManager.default.removeItem(at: partial)
            throw HubError.checksumMismatch(file: remote.name, url: remote.downloadURL, expected: expected, actual: digest)
        }
        let blob = cache.blobURL(repository, etag: remote.etag)
        guard rename(partial.path, blob.path) == 0 else { throw BlobWriter.error(errno, path: blob.path) }
    }

    /// The first byte of `bytes 100-199/200`, or nil.
    static func rangeStart(_ contentRange: String?) -> Int64? {
        guard let text = contentRange?.trimmingCharacters(in: .whitespaces), text.hasPrefix("bytes ") else {
            return nil
        }
        return text.dropFirst(6).split(separator: "-").first.flatMap { Int64($0) }
    }

    static func isSHA256Hex(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// The distinct values of `weight_map` in a `model.safetensors.index.json`.
    static func shardNames(inIndex url: URL) -> [String] {
        guard let data = try? Data(contentsOf: url),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let map = object["weight_map"] as? [String: Any]
        else { return [] }
        return Array(Set(map.values.compactMap { $0 as? String }))
    }
}
