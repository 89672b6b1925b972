import Foundation
import PhiHub

/// A local stand-in for huggingface.co, answering as the real hub does:
/// - `GET /api/models/{org}/{name}/revision/{rev}` -> `{"id", "sha", "siblings": [{"rfilename"}]}`;
/// - `HEAD|GET /{org}/{name}/resolve/{rev}/{file}`: small files answer 200 with a quoted git
///   `ETag`; large (LFS) files answer 302 to `/cdn/<sha256>` with `X-Linked-Etag` (the SHA-256)
///   and `X-Linked-Size`; both carry `X-Repo-Commit`;
/// - `GET /cdn/<sha256>`: the bytes, honouring `Range: bytes=N-` with 206.
/// Knobs make it misbehave the ways the client must survive.
final class FakeHub: @unchecked Sendable {
    struct Repository {
        let id: String
        let commit: String
        /// File name -> content.
        let files: [String: [UInt8]]
        /// Files stored in LFS (served through the CDN redirect, named by SHA-256).
        let largeFiles: Set<String>
    }

    private let lock = NSLock()
    private var repositories: [String: Repository] = [:]
    private var _requiredToken: String?
    private var _failAllWith: Int?
    private var _cutFirstDownloadOf: Set<String> = []
    private var _wrongBytesFor: Set<String> = []
    private var _renamed: [String: String] = [:]
    private var _missingFromResolve: Set<String> = []
    /// The hub itself (API and resolve URLs).
    private(set) var server: LocalHTTPServer!
    /// The CDN holding LFS files, on another port, i.e. another origin, as on the real hub.
    private(set) var cdnServer: LocalHTTPServer!

    init() throws {
        server = try LocalHTTPServer { [unowned self] request in self.answer(request) }
        cdnServer = try LocalHTTPServer { [unowned self] request in self.answer(request) }
    }

    var endpoint: URL { URL(string: server.baseURL)! }

    func add(_ repository: Repository) { locked { repositories[repository.id] = repository } }
    /// Answer 401 unless `Authorization: Bearer <token>` is sent (API and resolve URLs).
    func requireToken(_ token: String?) { locked { _requiredToken = token } }
    /// Answer every request with this status.
    func failAll(with status: Int?) { locked { _failAllWith = status } }
    /// The first full (non-Range) CDN download of this file stops halfway and closes the connection.
    func cutFirstDownload(of file: String) { locked { _ = _cutFirstDownloadOf.insert(file) } }
    /// Serve bytes that differ from the SHA-256 announced for this file.
    func serveWrongBytes(for file: String) { locked { _ = _wrongBytesFor.insert(file) } }

    /// Requests the hub received, in order.
    /// Requests naming repository `old` get a relative 307 to the same path under `new`.
    func rename(_ old: String, to new: String) { locked { _renamed[old] = new } }
    /// The file stays listed by the API, but its resolve URL answers 404 `EntryNotFound`.
    func removeFromResolve(_ file: String) { locked { _ = _missingFromResolve.insert(file) } }

    var requests: [LocalHTTPServer.Request] { server.requests }
    /// Requests the CDN received, in order.
    var cdnRequests: [LocalHTTPServer.Request] { cdnServer.requests }

    func stop() {
        server.stop()
        cdnServer.stop()
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    private func answer(_ request: LocalHTTPServer.Request) -> LocalHTTPServer.Response {
        lock.lock()
        defer { lock.unlock() }
        if let status = _failAllWith { return .text(status, "failure for the test") }
        let path = request.path.removingPercentEncoding ?? request.path
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        if parts.first == "cdn", parts.count == 2 { return cdn(sha: parts[1], request: request) }
        if let token = _requiredToken, request.headers["authorization"] != "Bearer \(token)" {
            return .text(401, "Invalid credentials", headers: [("X-Error-Code", "GatedRepo")])
        }
        for (old, new) in _renamed where request.path.contains("/\(old)/") {
            let target = request.path.replacingOccurrences(of: "/\(old)/", with: "/\(new)/")
            return LocalHTTPServer.Response(status: 307, headers: [("Location", target)])
        }
        // /api/models/{org}/{name}/revision/{rev...}
        if parts.count >= 6, parts[0] == "api", parts[1] == "models", parts[4] == "revision" {
            guard let repository = repositories["\(parts[2])/\(parts[3])"] else {
                return .text(404, "Repository not found", headers: [("X-Error-Code", "RepoNotFound")])
            }
            let siblings = repository.files.keys.sorted().map { "{\"rfilename\": \"\($0)\"}" }.joined(separator: ", ")
            let json = "{\"_id\": \"0\", \"id\": \"\(repository.id)\", \"sha\": \"\(repository.commit)\", "
                + "\"private\": false, \"siblings\": [\(siblings)]}"
            return .text(200, json, headers: [("Content-Type", "application/json")])
        }
        // /{org}/{name}/resolve/{rev}/{file}
        if parts.count >= 5, parts[2] == "resolve" {
            guard let repository = repositories["\(parts[0])/\(parts[1])"] else {
                return .text(404, "Repository not found", headers: [("X-Error-Code", "RepoNotFound")])
            }
            let file = parts[4...].joined(separator: "/")
            guard let content = repository.files[file], !_missingFromResolve.contains(file) else {
                return .text(404, "Entry not found", headers: [("X-Error-Code", "EntryNotFound")])
            }
            var headers = [("X-Repo-Commit", repository.commit)]
            if repository.largeFiles.contains(file) {
                let sha = SHA256.hexDigest(of: content)
                headers += [
                    ("Location", "\(cdnServer.baseURL)/cdn/\(sha)"), ("X-Linked-Etag", "\"\(sha)\""),
                    ("X-Linked-Size", "\(content.count)"), ("ETag", "\"\(Self.gitHash(file))\""),
                ]
                return LocalHTTPServer.Response(status: 302, headers: headers)
            }
            headers.append(("ETag", "\"\(Self.gitHash(file + repository.commit))\""))
            return LocalHTTPServer.Response(status: 200, headers: headers, body: content)
        }
        return .text(404, "no route")
    }

    /// The CDN: content by SHA-256, with Range support.
    private func cdn(sha: String, request: LocalHTTPServer.Request) -> LocalHTTPServer.Response {
        if request.headers["authorization"] != nil {
            return .text(400, "Only one auth mechanism allowed")  // as S3 answers a forwarded token
        }
        for repository in repositories.values {
            for (file, content) in repository.files where SHA256.hexDigest(of: content) == sha {
                var bytes = content
                if _wrongBytesFor.contains(file), !bytes.isEmpty { bytes[bytes.count / 2] ^= 0xFF }
                var start = 0
                if let range = request.headers["range"], range.hasPrefix("bytes="),
                    let first = range.dropFirst(6).split(separator: "-").first, let offset = Int(first)
                {
                    start = offset
                }
                if start >= bytes.count, start > 0 {
                    return .text(416, "", headers: [("Content-Range", "bytes */\(bytes.count)")])
                }
                if start > 0 {
                    return LocalHTTPServer.Response(
                        status: 206,
                        headers: [("Content-Range", "bytes \(start)-\(bytes.count - 1)/\(bytes.count)")],
                        body: Array(bytes[start...]))
                }
                var response = LocalHTTPServer.Response(status: 200, headers: [("Accept-Ranges", "bytes")], body: bytes)
                if request.method == "GET", _cutFirstDownloadOf.remove(file) != nil { response.cutAfter = bytes.count / 2 }
                return response
            }
        }
        return .text(404, "no such blob")
    }

    /// A stand-in for a git blob hash: 40 hex characters derived from `text`.
    static func gitHash(_ text: String) -> String { String(SHA256.hexDigest(of: Array(text.utf8)).prefix(40)) }
}
