import Foundation

/// Everything that can go wrong reaching the hub or filling its cache. Each message names the
/// URL, repository or file concerned and says what to do.
public enum HubError: Error, Equatable, CustomStringConvertible, LocalizedError {
    /// The host could not be reached (DNS, refused connection, timeout, TLS) after retries.
    case unreachable(url: String, reason: String)
    /// HTTP 401/403: the repository is private or gated.
    case unauthorized(url: String, repository: String, tokenWasSent: Bool)
    /// HTTP 404: no such repository, revision or file.
    case notFound(url: String, repository: String, file: String?)
    /// HTTP 5xx after retries.
    case serverError(url: String, status: Int)
    /// Any other unexpected HTTP status.
    case unexpectedStatus(url: String, status: Int)
    /// The server answered, but not in the shape the hub answers in.
    case malformedResponse(url: String, reason: String)
    /// More redirects than allowed, or a redirect without a usable `Location`.
    case badRedirect(url: String, reason: String)
    /// The finished download's SHA-256 is not the one the hub reported; nothing was kept.
    case checksumMismatch(file: String, url: String, expected: String, actual: String)
    /// The finished download's length is not the one the hub reported; nothing was kept.
    case sizeMismatch(file: String, url: String, expected: Int64, actual: Int64)
    /// A download broke off and could not be resumed within the allowed attempts.
    case downloadInterrupted(file: String, url: String, attempts: Int, reason: String)
    /// `HF_HUB_OFFLINE` is set and the cache lacks the repository, revision or a file.
    case notCachedOffline(repository: String, revision: String, cacheDirectory: String)
    /// The disk has too little free space for the files to download.
    case diskFull(path: String, neededBytes: Int64?, availableBytes: Int64?)
    /// Creating, writing, linking or moving a file in the cache failed.
    case fileSystem(path: String, reason: String)
    /// An environment variable or argument that cannot work.
    case invalidConfiguration(String)

    public var description: String {
        switch self {
        case .unreachable(let url, let reason):
            return "cannot reach \(url): \(reason). Check the network connection and HF_ENDPOINT; "
                + "if the model is already cached, set HF_HUB_OFFLINE=1 to use the cache only"
        case .unauthorized(let url, let repository, let tokenWasSent):
            let advice =
                tokenWasSent
                ? "the token in HF_TOKEN was refused; check that it is valid and has access to \(repository)"
                : "set HF_TOKEN to an access token (https://huggingface.co/settings/tokens) with access to \(repository)"
            return "\(url) answered 401 Unauthorized: \(repository) is private or gated; \(advice)"
        case .notFound(let url, let repository, let file):
            if let file {
                return "\(url) answered 404 Not Found: \(repository) has no file '\(file)' at that revision"
            }
            return "\(url) answered 404 Not Found: no model repository '\(repository)' with that revision "
                + "on the hub; check the name (org/name) and --revision"
        case .serverError(let url, let status):
            return "\(url) answered \(status) (server error) several times; the hub may be down, try again later"
        case .unexpectedStatus(let url, let status):
            return "\(url) answered HTTP \(status), which phi-gpu does not expect from the hub"
        case .malformedResponse(let url, let reason):
            return "\(url) gave a response that is not what the hub sends: \(reason); check HF_ENDPOINT"
        case .badRedirect(let url, let reason):
            return "\(url) redirected badly: \(reason)"
        case .checksumMismatch(let file, let url, let expected, let actual):
            return "\(file) downloaded from \(url) has SHA-256 \(actual) but the hub says \(expected); "
                + "the download was discarded, run the command again"
        case .sizeMismatch(let file, let url, let expected, let actual):
            return "\(file) downloaded from \(url) has \(actual) bytes but the hub says \(expected); "
                + "the download was discarded, run the command again"
        case .downloadInterrupted(let file, let url, let attempts, let reason):
            return "downloading \(file) from \(url) broke off \(attempts) times (last: \(reason)); "
                + "run the command again to resume where it stopped"
        case .notCachedOffline(let repository, let revision, let cacheDirectory):
            return "HF_HUB_OFFLINE is set and \(repository) at revision '\(revision)' is not (fully) cached in "
                + "\(cacheDirectory); unset HF_HUB_OFFLINE and run `phi-gpu download \(repository)` first"
        case .diskFull(let path, let needed, let available):
            var message = "no space left on the device holding \(path)"
            if let needed, let available {
                message += " (\(ByteCountText.format(needed)) needed, \(ByteCountText.format(available)) free)"
            }
            return message + "; free some space or point HF_HUB_CACHE at a larger disk"
        case .fileSystem(let path, let reason):
            return "cannot write \(path): \(reason); check permissions of the cache (HF_HUB_CACHE)"
        case .invalidConfiguration(let message):
            return message
        }
    }

    public var errorDescription: String? { description }
}
