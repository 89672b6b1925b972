import Foundation
import TestSupport
import XCTest

@testable import PhiHub

/// What the client does when the hub, the network or the disk misbehave: a clear `HubError`
/// naming the URL or file, and nothing loadable left behind.
final class HubClientFailureTests: HubTestCase {
    /// Runs `body` and returns the `HubError` it throws (failing the test if it throws none).
    func hubError(_ body: () async throws -> URL, file: StaticString = #filePath, line: UInt = #line) async -> HubError? {
        do {
            let url = try await body()
            XCTFail("expected an error, got \(url.path)", file: file, line: line)
        } catch let error as HubError {
            return error
        } catch {
            XCTFail("expected a HubError, got \(error)", file: file, line: line)
        }
        return nil
    }

    var snapshotsFolder: URL { cacheDirectory.appendingPathComponent("models--test-org--Tiny-Model-4bit/snapshots") }
    var blobsFolder: URL { cacheDirectory.appendingPathComponent("models--test-org--Tiny-Model-4bit/blobs") }

    func testWrongChecksumIsRejectedAndLeavesNothingLoadable() async throws {
        let shard = "model-00001-of-00002.safetensors"
        hub.serveWrongBytes(for: shard)
        let error = await hubError { try await self.makeClient().snapshot(repository: Self.repositoryID) }
        guard case .checksumMismatch(let file, let url, let expected, let actual) = error else {
            return XCTFail("expected checksumMismatch, got \(String(describing: error))")
        }
        let sha = SHA256.hexDigest(of: contents[shard]!)
        XCTAssertEqual(file, shard)
        XCTAssertEqual(url, "\(hub.cdnServer.baseURL)/cdn/\(sha)")
        XCTAssertEqual(expected, sha)
        XCTAssertNotEqual(actual, sha)
        XCTAssertTrue(error?.description.contains(shard) ?? false)
        // Neither the blob, nor its partial download, nor a link in the snapshot.
        let blobs = (try? FileManager.default.contentsOfDirectory(atPath: blobsFolder.path)) ?? []
        XCTAssertFalse(blobs.contains { $0.hasPrefix(sha) }, "left: \(blobs)")
        let snapshot = snapshotsFolder.appendingPathComponent(Self.commit).appendingPathComponent(shard)
        XCTAssertFalse(FileManager.default.fileExists(atPath: snapshot.path))
        XCTAssertNil(try? FileManager.default.destinationOfSymbolicLink(atPath: snapshot.path))
        // Offline, the half-done snapshot does not count as cached.
        let offline = await hubError { try self.makeClient(offline: true).cachedSnapshot(repository: Self.repositoryID) }
        guard case .notCachedOffline = offline else { return XCTFail("got \(String(describing: offline))") }
    }

    func testUnknownRepositoryIs404NamingIt() async throws {
        let error = await hubError { try await self.makeClient().snapshot(repository: "test-org/No-Such-Model") }
        XCTAssertEqual(
            error,
            .notFound(
                url: "\(hub.endpoint.absoluteString)/api/models/test-org/No-Such-Model/revision/main",
                repository: "test-org/No-Such-Model", file: nil))
        XCTAssertTrue(error?.description.contains("test-org/No-Such-Model") ?? false)
    }

    func testGatedRepositoryAsksForHFToken() async throws {
        hub.requireToken("hf_right")
        let error = await hubError { try await self.makeClient().snapshot(repository: Self.repositoryID) }
        guard case .unauthorized(_, let repository, let tokenWasSent) = error else {
            return XCTFail("expected unauthorized, got \(String(describing: error))")
        }
        XCTAssertEqual(repository, Self.repositoryID)
        XCTAssertFalse(tokenWasSent)
        XCTAssertTrue(error?.description.contains("set HF_TOKEN") ?? false)
        let wrong = await hubError { try await self.makeClient(token: "hf_wrong").snapshot(repository: Self.repositoryID) }
        XCTAssertTrue(wrong?.description.contains("was refused") ?? false)
        let snapshot = try await makeClient(token: "hf_right").snapshot(repository: Self.repositoryID)
        XCTAssertEqual(Array(try Data(contentsOf: snapshot.appendingPathComponent("config.json"))), contents["config.json"])
    }

    func testServerErrorIsRetriedThenReported() async throws {
        hub.failAll(with: 500)
        let error = await hubError { try await self.makeClient().snapshot(repository: Self.repositoryID) }
        let url = "\(hub.endpoint.absoluteString)/api/models/\(Self.repositoryID)/revision/main"
        XCTAssertEqual(error, .serverError(url: url, status: 500))
        XCTAssertEqual(hub.requests.count, 3, "three attempts (RetryPolicy.maxAttempts)")
    }

    func testUnreachableHostNamesTheURL() async throws {
        // Nothing listens on port 1 of the loopback interface: the connection is refused.
        let client = HubClient(
            configuration: HubConfiguration(
                endpoint: URL(string: "http://127.0.0.1:1")!, cacheDirectory: cacheDirectory),
            retryPolicy: RetryPolicy(maxAttempts: 2, initialDelay: 0.01))
        let error = await hubError { try await client.snapshot(repository: Self.repositoryID) }
        guard case .unreachable(let url, _) = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertTrue(url.hasSuffix("/api/models/\(Self.repositoryID)/revision/main"), url)
        XCTAssertTrue(error?.description.contains("HF_HUB_OFFLINE=1") ?? false)
    }

    func testFullDiskIsReportedBeforeDownloading() async throws {
        var client = makeClient()
        client.availableBytes = { _ in 1000 }
        let error = await hubError { try await client.snapshot(repository: Self.repositoryID) }
        guard case .diskFull(let path, let needed, let available) = error else {
            return XCTFail("expected diskFull, got \(String(describing: error))")
        }
        XCTAssertEqual(path, blobsFolder.path)
        XCTAssertEqual(needed, Int64(Self.neededFiles.map { contents[$0]!.count }.reduce(0, +)))
        XCTAssertEqual(available, 1000)
        XCTAssertTrue(hub.cdnRequests.isEmpty)
    }

    func testWriteErrorNamesTheFile() throws {
        XCTAssertEqual(
            BlobWriter.error(ENOSPC, path: "/cache/blobs/abc.incomplete"),
            .diskFull(path: "/cache/blobs/abc.incomplete", neededBytes: nil, availableBytes: nil))
        let readOnly = URL(fileURLWithPath: "/proc/phi-gpu-cannot-write-here.incomplete")
        XCTAssertThrowsError(try BlobWriter(url: readOnly)) { error in
            guard case .fileSystem(let path, _) = error as? HubError else { return XCTFail("got \(error)") }
            XCTAssertEqual(path, readOnly.path)
        }
    }

    func testOfflineModeUsesOnlyTheCache() async throws {
        let notCached = await hubError {
            try await self.makeClient(offline: true).snapshot(repository: Self.repositoryID)
        }
        XCTAssertEqual(
            notCached,
            .notCachedOffline(repository: Self.repositoryID, revision: "main", cacheDirectory: cacheDirectory.path))
        XCTAssertTrue(notCached?.description.contains(Self.repositoryID) ?? false)
        XCTAssertEqual(hub.requests.count, 0)

        let online = try await makeClient().snapshot(repository: Self.repositoryID)
        let count = hub.requests.count
        let offline = try await makeClient(offline: true).snapshot(repository: Self.repositoryID)
        XCTAssertEqual(offline, online)
        let byCommit = try await makeClient(offline: true).snapshot(repository: Self.repositoryID, revision: Self.commit)
        XCTAssertEqual(byCommit, online)
        XCTAssertEqual(hub.requests.count, count, "offline mode made requests")

        // A shard missing from the cache makes the snapshot incomplete.
        try FileManager.default.removeItem(at: online.appendingPathComponent("model-00002-of-00002.safetensors"))
        let incomplete = await hubError { try self.makeClient(offline: true).cachedSnapshot(repository: Self.repositoryID) }
        guard case .notCachedOffline = incomplete else { return XCTFail("got \(String(describing: incomplete))") }
    }

    func testRepositoryWithoutConfigIsNotAModel() async throws {
        hub.add(
            FakeHub.Repository(
                id: "test-org/datasets-only", commit: Self.commit, files: ["README.md": [1]], largeFiles: []))
        let error = await hubError { try await self.makeClient().snapshot(repository: "test-org/datasets-only") }
        guard case .malformedResponse(_, let reason) = error else { return XCTFail("got \(String(describing: error))") }
        XCTAssertTrue(reason.contains("no config.json"), reason)
    }

    func testListedFileMissingFromResolveIs404NamingTheFile() async throws {
        hub.removeFromResolve("tokenizer.json")
        let error = await hubError { try await self.makeClient().snapshot(repository: Self.repositoryID) }
        XCTAssertEqual(
            error,
            .notFound(
                url: "\(hub.endpoint.absoluteString)/\(Self.repositoryID)/resolve/\(Self.commit)/tokenizer.json",
                repository: Self.repositoryID, file: "tokenizer.json"))
        XCTAssertTrue(error?.description.contains("no file 'tokenizer.json'") ?? false)
    }

    func testSecondWriterOfTheSameBlobIsRefused() throws {
        try FileManager.default.createDirectory(at: cacheDirectory, withIntermediateDirectories: true)
        let partial = cacheDirectory.appendingPathComponent("abc.incomplete")
        var first: BlobWriter? = try BlobWriter(url: partial)
        XCTAssertThrowsError(try BlobWriter(url: partial)) { error in
            guard case .fileSystem(let path, let reason) = error as? HubError else { return XCTFail("got \(error)") }
            XCTAssertEqual(path, partial.path)
            XCTAssertTrue(reason.contains("another process"), reason)
        }
        XCTAssertNotNil(first)
        first = nil  // closes the file, releasing the lock
        XCTAssertNoThrow(try BlobWriter(url: partial), "the lock ends with the first writer")
    }
}
