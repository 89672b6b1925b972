import Foundation
import TestSupport
import XCTest

@testable import PhiHub

/// Snapshot downloads against `FakeHub`: what lands in the cache, and which requests were made.
final class HubClientDownloadTests: HubTestCase {
    func testDownloadsOnlyNeededFilesIntoHuggingFaceCacheLayout() async throws {
        let reports = ProgressLog()
        let snapshot = try await makeClient().snapshot(repository: Self.repositoryID) { reports.append($0) }

        let repositoryFolder = cacheDirectory.appendingPathComponent("models--test-org--Tiny-Model-4bit")
        XCTAssertEqual(snapshot.path, repositoryFolder.appendingPathComponent("snapshots/\(Self.commit)").path)
        let names = try FileManager.default.contentsOfDirectory(atPath: snapshot.path).sorted()
        XCTAssertEqual(names, Self.neededFiles)
        for name in names {
            let pointer = snapshot.appendingPathComponent(name)
            XCTAssertEqual(Array(try Data(contentsOf: pointer)), contents[name], name)
            let target = try FileManager.default.destinationOfSymbolicLink(atPath: pointer.path)
            XCTAssertTrue(target.hasPrefix("../../blobs/"), "\(name) links to \(target)")
        }
        // LFS blobs are named by their SHA-256; small files by their git ETag.
        let shardSHA = SHA256.hexDigest(of: contents["model-00001-of-00002.safetensors"]!)
        XCTAssertEqual(
            try FileManager.default.destinationOfSymbolicLink(
                atPath: snapshot.appendingPathComponent("model-00001-of-00002.safetensors").path),
            "../../blobs/\(shardSHA)")
        let blobs = try FileManager.default.contentsOfDirectory(
            atPath: repositoryFolder.appendingPathComponent("blobs").path)
        XCTAssertEqual(blobs.count, Self.neededFiles.count)
        XCTAssertFalse(blobs.contains { $0.hasSuffix(".incomplete") })
        XCTAssertEqual(
            try String(contentsOf: repositoryFolder.appendingPathComponent("refs/main"), encoding: .utf8), Self.commit)

        // Never asked for files the model does not need.
        XCTAssertFalse(hub.requests.contains { $0.path.contains("README") || $0.path.contains("pytorch_model") })
        XCTAssertFalse(hub.requests.contains { $0.path.contains("onnx") })
        // The hub's token never reaches the CDN (the fake CDN answers 400 to one), and LFS bytes came from it.
        XCTAssertTrue(hub.cdnRequests.contains { $0.path == "/cdn/\(shardSHA)" && $0.method == "GET" })

        // Progress: monotonic, ends at the total of all bytes fetched, one "finished" per file.
        let total = Int64(Self.neededFiles.map { contents[$0]!.count }.reduce(0, +))
        let log = reports.values
        XCTAssertEqual(log.last?.completedBytes, total)
        XCTAssertEqual(log.last?.totalBytes, total)
        XCTAssertEqual(log.filter(\.fileFinished).count, Self.neededFiles.count)
        XCTAssertEqual(log.map(\.completedBytes), log.map(\.completedBytes).sorted())
    }

    func testSecondRunUsesCacheAndOnlyAsksForTheCommit() async throws {
        let client = makeClient(token: "hf_secret")
        _ = try await client.snapshot(repository: Self.repositoryID)
        let before = hub.requests.count
        let snapshot = try await client.snapshot(repository: Self.repositoryID)
        let after = hub.requests[before...]
        XCTAssertEqual(after.map(\.path), ["/api/models/\(Self.repositoryID)/revision/main"])
        XCTAssertEqual(after.first?.headers["authorization"], "Bearer hf_secret")
        // The token went to the hub but never to the CDN, another origin (whose fake answers 400 to one).
        XCTAssertFalse(hub.cdnRequests.isEmpty)
        XCTAssertTrue(hub.cdnRequests.allSatisfy { $0.headers["authorization"] == nil })
        XCTAssertEqual(
            try Data(contentsOf: snapshot.appendingPathComponent("config.json")), Data(contents["config.json"]!))
    }

    func testRevisionIsEncodedAndRecordedUnderRefs() async throws {
        let snapshot = try await makeClient().snapshot(repository: Self.repositoryID, revision: "refs/pr/1")
        XCTAssertTrue(hub.requests.contains { $0.path == "/api/models/\(Self.repositoryID)/revision/refs%2Fpr%2F1" })
        let ref = cacheDirectory.appendingPathComponent("models--test-org--Tiny-Model-4bit/refs/refs/pr/1")
        XCTAssertEqual(try String(contentsOf: ref, encoding: .utf8), Self.commit)
        XCTAssertTrue(snapshot.path.hasSuffix("snapshots/\(Self.commit)"))
    }

    func testConnectionCutMidFileIsResumedWithRange() async throws {
        let shard = "model-00001-of-00002.safetensors"
        hub.cutFirstDownload(of: shard)
        let snapshot = try await makeClient().snapshot(repository: Self.repositoryID)
        XCTAssertEqual(Array(try Data(contentsOf: snapshot.appendingPathComponent(shard))), contents[shard])
        let sha = SHA256.hexDigest(of: contents[shard]!)
        let ranges = hub.cdnRequests.filter { $0.path == "/cdn/\(sha)" }.map { $0.headers["range"] }
        XCTAssertEqual(ranges.count, 2, "one cut transfer, one resumed")
        XCTAssertEqual(ranges.first, .some(nil))
        // Resumed where the written bytes end: after some bytes, at most where the server cut.
        let resumedAt = ranges.last??.split(separator: "=").last?.dropLast().description
        let offset = try XCTUnwrap(resumedAt.flatMap { Int($0) }, "\(ranges)")
        XCTAssertGreaterThan(offset, 0)
        XCTAssertLessThanOrEqual(offset, contents[shard]!.count / 2)
    }

    func testInterruptedRunResumesFromIncompleteFileOnDisk() async throws {
        let shard = "model-00002-of-00002.safetensors"
        let bytes = contents[shard]!
        let sha = SHA256.hexDigest(of: bytes)
        let blobs = cacheDirectory.appendingPathComponent("models--test-org--Tiny-Model-4bit/blobs")
        try FileManager.default.createDirectory(at: blobs, withIntermediateDirectories: true)
        try Data(bytes[0..<12_345]).write(to: blobs.appendingPathComponent("\(sha).incomplete"))

        let snapshot = try await makeClient().snapshot(repository: Self.repositoryID)
        XCTAssertEqual(Array(try Data(contentsOf: snapshot.appendingPathComponent(shard))), bytes)
        let ranges = hub.cdnRequests.filter { $0.path == "/cdn/\(sha)" }.map { $0.headers["range"] }
        XCTAssertEqual(ranges, ["bytes=12345-"])
    }

    func testRenamedRepositoryIsFollowedThroughRelativeRedirects() async throws {
        hub.rename("test-org/Old-Name", to: Self.repositoryID)
        let snapshot = try await makeClient().snapshot(repository: "test-org/Old-Name")
        // Cached under the name asked for, as huggingface_hub does.
        XCTAssertTrue(snapshot.path.contains("models--test-org--Old-Name/snapshots/\(Self.commit)"), snapshot.path)
        XCTAssertEqual(Array(try Data(contentsOf: snapshot.appendingPathComponent("tokenizer.json"))), contents["tokenizer.json"])
        XCTAssertTrue(hub.requests.contains { $0.path == "/api/models/\(Self.repositoryID)/revision/main" })
    }
}

/// Collects progress reports from the downloading task.
final class ProgressLog: @unchecked Sendable {
    private let lock = NSLock()
    private var reports: [DownloadProgress] = []

    func append(_ progress: DownloadProgress) {
        lock.lock()
        reports.append(progress)
        lock.unlock()
    }

    var values: [DownloadProgress] {
        lock.lock()
        defer { lock.unlock() }
        return reports
    }
}
