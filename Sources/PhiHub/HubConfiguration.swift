import Foundation

/// Where the hub is, who we are to it, and where its files are cached: read from the same
/// environment variables as Python's `huggingface_hub`, so both share one cache.
public struct HubConfiguration: Sendable, Equatable {
    /// The hub's base URL (`HF_ENDPOINT`, default `https://huggingface.co`), without a trailing slash.
    public var endpoint: URL
    /// The cache root holding `models--org--name` folders (`HF_HUB_CACHE`, else `$HF_HOME/hub`,
    /// else `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`).
    public var cacheDirectory: URL
    /// The access token sent as `Authorization: Bearer` (`HF_TOKEN`, else the file `$HF_HOME/token`
    /// written by `huggingface-cli login`).
    public var token: String?
    /// `HF_HUB_OFFLINE=1`: never touch the network, use only what is cached.
    public var offline: Bool

    public init(endpoint: URL, cacheDirectory: URL, token: String? = nil, offline: Bool = false) {
        self.endpoint = endpoint
        self.cacheDirectory = cacheDirectory
        self.token = token
        self.offline = offline
    }

    /// The configuration of this process's environment.
    public static func fromEnvironment() throws -> HubConfiguration {
        try HubConfiguration(environment: ProcessInfo.processInfo.environment)
    }

    /// Reads `HF_ENDPOINT`, `HF_HUB_CACHE`, `HF_HOME`, `XDG_CACHE_HOME`, `HF_TOKEN`, `HF_TOKEN_PATH`
    /// and `HF_HUB_OFFLINE` from `environment`.
    public init(environment: [String: String]) throws {
        func value(_ name: String) -> String? {
            guard let text = environment[name]?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty
            else { return nil }
            return text
        }
        let endpointText = value("HF_ENDPOINT") ?? "https://huggingface.co"
        let trimmedEndpoint = endpointText.hasSuffix("/") ? String(endpointText.dropLast()) : endpointText
        guard let endpoint = URL(string: trimmedEndpoint), let scheme = endpoint.scheme?.lowercased(),
            scheme == "http" || scheme == "https", endpoint.host != nil
        else {
            throw HubError.invalidConfiguration(
                "HF_ENDPOINT is '\(endpointText)', which is not an http(s) URL; set it like https://huggingface.co")
        }
        let home = value("HOME").map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.homeDirectoryForCurrentUser
        let hfHome: URL =
            if let path = value("HF_HOME") {
                URL(fileURLWithPath: Self.expandingTilde(path, home: home), isDirectory: true)
            } else if let xdg = value("XDG_CACHE_HOME") {
                URL(fileURLWithPath: Self.expandingTilde(xdg, home: home), isDirectory: true)
                    .appendingPathComponent("huggingface", isDirectory: true)
            } else {
                home.appendingPathComponent(".cache/huggingface", isDirectory: true)
            }
        let cache: URL =
            if let path = value("HF_HUB_CACHE") {
                URL(fileURLWithPath: Self.expandingTilde(path, home: home), isDirectory: true)
            } else {
                hfHome.appendingPathComponent("hub", isDirectory: true)
            }
        var token = value("HF_TOKEN")
        if token == nil {
            let tokenFile = value("HF_TOKEN_PATH").map { URL(fileURLWithPath: Self.expandingTilde($0, home: home)) }
                ?? hfHome.appendingPathComponent("token")
            if let text = try? String(contentsOf: tokenFile, encoding: .utf8) {
                let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
                token = trimmed.isEmpty ? nil : trimmed
            }
        }
        let offlineText = value("HF_HUB_OFFLINE")?.lowercased() ?? ""
        self.init(
            endpoint: endpoint, cacheDirectory: cache, token: token,
            offline: ["1", "on", "yes", "true"].contains(offlineText))
    }

    private static func expandingTilde(_ path: String, home: URL) -> String {
        if path == "~" { return home.path }
        if path.hasPrefix("~/") { return home.appendingPathComponent(String(path.dropFirst(2))).path }
        return path
    }
}
