import AsyncHTTPClient
import Foundation

/// How often and how patiently to retry a request that failed in transit or got a 5xx answer.
public struct RetryPolicy: Sendable, Equatable {
    /// Attempts in all, first one included (for a download: attempts in a row without progress).
    public var maxAttempts: Int
    /// Wait before the second attempt, in seconds; doubled for each further one.
    public var initialDelay: Double
    /// Longest wait between attempts, in seconds.
    public var maxDelay: Double

    public init(maxAttempts: Int = 4, initialDelay: Double = 0.5, maxDelay: Double = 8) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
    }

    /// Sleeps before retry number `retry` (1 = the second attempt).
    func wait(beforeRetry retry: Int) async throws {
        let seconds = min(maxDelay, initialDelay * Double(1 << min(retry - 1, 20)))
        try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
    }
}

/// A repository's file list at one commit, as `GET /api/models/{repo}/revision/{rev}` returns it:
/// `{"id": "org/name", "sha": "<commit>", "siblings": [{"rfilename": "config.json"}, ...], ...}`.
struct RevisionInfo: Decodable {
    struct Sibling: Decodable { let rfilename: String }
    let sha: String?
    let siblings: [Sibling]?
}

/// One file to fetch, from the `HEAD` of its `resolve` URL.
struct RemoteFile {
    /// Path in the repository.
    let name: String
    /// `X-Linked-Etag` (the SHA-256, for LFS files) or `ETag` (the git blob hash), unquoted.
    let etag: String
    /// `X-Linked-Size` or `Content-Length`, when the server says.
    let size: Int64?
    /// Where the bytes are: the redirect target (CDN) for LFS files, else the resolve URL.
    let downloadURL: String
}

/// The HTTP side of the hub client: the requests, their headers, redirects, retries and the
/// translation of HTTP statuses into `HubError`s.
struct HubTransport {
    let http: HTTPClient
    let configuration: HubConfiguration
    let retryPolicy: RetryPolicy
    static let maxRedirects = 5

    enum Verb { case get, head }

    /// `GET {endpoint}/api/models/{repo}/revision/{revision}`.
    func revisionInfo(repository: String, revision: String) async throws -> (commit: String, files: [String]) {
        let (response, url) = try await sendFollowingRelativeRedirects(
            .get, url: "\(endpointText)/api/models/\(repository)/revision/\(Self.encode(revision, keepSlash: false))")
        try check(response, url: url, repository: repository, file: nil)
        let body: Data
        do {
            body = Data((try await response.body.collect(upTo: 64 << 20)).readableBytesView)
        } catch {
            throw HubError.unreachable(url: url, reason: "the answer broke off: \(error)")
        }
        let info: RevisionInfo
        do {
            info = try JSONDecoder().decode(RevisionInfo.self, from: body)
        } catch {
            throw HubError.malformedResponse(url: url, reason: "the body is not the hub's revision JSON (\(error))")
        }
        guard let commit = info.sha, HubPathComponent.isSafe(commit) else {
            throw HubError.malformedResponse(url: url, reason: "no usable \"sha\" (commit hash) in the JSON")
        }
        return (commit, (info.siblings ?? []).map(\.rfilename))
    }

    /// `HEAD {endpoint}/{repo}/resolve/{commit}/{file}`, following relative redirects only, as
    /// `huggingface_hub` does: an absolute redirect points at the CDN holding the bytes, and the
    /// response carrying it also carries the file's `X-Linked-Etag` and `X-Linked-Size`.
    func metadata(repository: String, commit: String, file: String) async throws -> RemoteFile {
        let (response, url) = try await sendFollowingRelativeRedirects(
            .head, url: "\(endpointText)/\(repository)/resolve/\(commit)/\(Self.encode(file, keepSlash: true))")
        let headers = response.headers
        var downloadURL = url
        if (300...399).contains(Int(response.status.code)) {
            guard let location = headers.first(name: "Location"),
                let target = URL(string: location, relativeTo: URL(string: url))?.absoluteString
            else { throw HubError.badRedirect(url: url, reason: "no usable Location header") }
            downloadURL = target
        } else {
            try check(response, url: url, repository: repository, file: file)
        }
        let rawEtag = headers.first(name: "X-Linked-Etag") ?? headers.first(name: "ETag")
        guard let etag = rawEtag.map(Self.unquotedEtag), HubPathComponent.isSafe(etag) else {
            throw HubError.malformedResponse(url: url, reason: "no usable ETag header for \(file)")
        }
        let sizeText = headers.first(name: "X-Linked-Size") ?? headers.first(name: "Content-Length")
        return RemoteFile(name: file, etag: etag, size: sizeText.flatMap { Int64($0) }, downloadURL: downloadURL)
    }

    /// Sends a request, following redirects within the hub (a `Location` without a host, as for a
    /// renamed repository). Returns the last response, which may be a redirect to another host.
    func sendFollowingRelativeRedirects(_ verb: Verb, url: String) async throws
        -> (response: HTTPClientResponse, url: String)
    {
        var current = url
        for _ in 0...Self.maxRedirects {
            let response = try await send(verb, url: current, retrying: true)
            guard (300...399).contains(Int(response.status.code)),
                let location = response.headers.first(name: "Location"), URL(string: location)?.host == nil
            else { return (response, current) }
            guard let target = URL(string: location, relativeTo: URL(string: current))?.absoluteString else {
                throw HubError.badRedirect(url: current, reason: "unusable Location '\(location)'")
            }
            current = target
        }
        throw HubError.badRedirect(url: url, reason: "more than \(Self.maxRedirects) redirects")
    }

    /// One `GET` of `url` from byte `rangeStart` on, following redirects; no retries (the
    /// downloader resumes instead). The caller reads the body.
    func getFile(_ url: String, rangeStart: Int64, repository: String, file: String) async throws
        -> (response: HTTPClientResponse, url: String)
    {
        var current = url
        for _ in 0...Self.maxRedirects {
            let response = try await send(.get, url: current, rangeStart: rangeStart, retrying: false)
            guard (300...399).contains(Int(response.status.code)) else { return (response, current) }
            guard let location = response.headers.first(name: "Location"),
                let target = URL(string: location, relativeTo: URL(string: current))?.absoluteString
            else { throw HubError.badRedirect(url: current, reason: "no usable Location header") }
            current = target
        }
        throw HubError.badRedirect(url: url, reason: "more than \(Self.maxRedirects) redirects")
    }

    /// Sends one request with the hub's headers; the token only goes to the hub's own host. With
    /// `retrying`, transport failures and 5xx answers are retried with backoff; transport failures
    /// that persist become `.unreachable`.
    func send(_ verb: Verb, url: String, rangeStart: Int64 = 0, retrying: Bool) async throws -> HTTPClientResponse {
        var request = HTTPClientRequest(url: url)
        request.method = verb == .head ? .HEAD : .GET
        request.headers.add(name: "User-Agent", value: "phi-gpu/0.1 (huggingface_hub compatible)")
        request.headers.add(name: "Accept-Encoding", value: "identity")
        if let token = configuration.token, isHubHost(url) {
            request.headers.add(name: "Authorization", value: "Bearer \(token)")
        }
        if rangeStart > 0 { request.headers.add(name: "Range", value: "bytes=\(rangeStart)-") }
        let attempts = retrying ? retryPolicy.maxAttempts : 1
        var lastError: any Error = HubError.unreachable(url: url, reason: "no attempt made")
        for attempt in 1...attempts {
            if attempt > 1 { try await retryPolicy.wait(beforeRetry: attempt - 1) }
            do {
                // The whole transfer must end within a day; stalls are caught by the read timeout.
                let response = try await http.execute(request, timeout: .hours(24))
                if Self.isRetryableStatus(Int(response.status.code)), attempt < attempts { continue }
                return response
            } catch let error as CancellationError {
                throw error
            } catch {
                lastError = error
            }
        }
        throw HubError.unreachable(url: url, reason: Self.describe(lastError))
    }

    /// Throws the `HubError` for a non-2xx answer, using the hub's `X-Error-Code` where present.
    func check(_ response: HTTPClientResponse, url: String, repository: String, file: String?) throws {
        let status = Int(response.status.code)
        if (200...299).contains(status) { return }
        switch (status, response.headers.first(name: "X-Error-Code")) {
        case (_, "RepoNotFound"), (_, "RevisionNotFound"):
            throw HubError.notFound(url: url, repository: repository, file: nil)
        case (_, "EntryNotFound"):
            throw HubError.notFound(url: url, repository: repository, file: file)
        case (401, _), (403, _), (_, "GatedRepo"):
            throw HubError.unauthorized(url: url, repository: repository, tokenWasSent: configuration.token != nil)
        case (404, _):
            throw HubError.notFound(url: url, repository: repository, file: file)
        case (500...599, _):
            throw HubError.serverError(url: url, status: status)
        default:
            throw HubError.unexpectedStatus(url: url, status: status)
        }
    }

    static func isRetryableStatus(_ status: Int) -> Bool { [500, 502, 503, 504].contains(status) }

    /// A transport error in words.
    static func describe(_ error: any Error) -> String {
        if let hubError = error as? HubError { return hubError.description }
        return String(describing: error)
    }

    private var endpointText: String { configuration.endpoint.absoluteString }

    private func isHubHost(_ url: String) -> Bool {
        guard let target = URL(string: url) else { return false }
        return target.host == configuration.endpoint.host && target.port == configuration.endpoint.port
            && target.scheme == configuration.endpoint.scheme
    }

    /// `"abc"` and `W/"abc"` -> `abc`.
    static func unquotedEtag(_ raw: String) -> String {
        var text = raw.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("W/") { text.removeFirst(2) }
        return text.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }

    /// Percent-encodes a revision (slashes too, as `refs/pr/1` -> `refs%2Fpr%2F1`) or a file path.
    static func encode(_ text: String, keepSlash: Bool) -> String {
        var allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
        if keepSlash { allowed.insert("/") }
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
