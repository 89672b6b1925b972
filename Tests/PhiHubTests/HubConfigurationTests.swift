import Foundation
import XCTest

@testable import PhiHub

final class HubConfigurationTests: XCTestCase {
    func testDefaultsFollowHuggingFaceHub() throws {
        let configuration = try HubConfiguration(environment: ["HOME": "/home/u"])
        XCTAssertEqual(configuration.endpoint.absoluteString, "https://huggingface.co")
        XCTAssertEqual(configuration.cacheDirectory.path, "/home/u/.cache/huggingface/hub")
        XCTAssertFalse(configuration.offline)
    }

    func testVariablesInOrderOfPrecedence() throws {
        var environment = ["HOME": "/home/u", "XDG_CACHE_HOME": "/xdg"]
        XCTAssertEqual(try HubConfiguration(environment: environment).cacheDirectory.path, "/xdg/huggingface/hub")
        environment["HF_HOME"] = "~/hf"
        XCTAssertEqual(try HubConfiguration(environment: environment).cacheDirectory.path, "/home/u/hf/hub")
        environment["HF_HUB_CACHE"] = "/fast/cache"
        environment["HF_ENDPOINT"] = "http://127.0.0.1:8080/"
        environment["HF_TOKEN"] = " hf_abc \n"
        environment["HF_HUB_OFFLINE"] = "1"
        let configuration = try HubConfiguration(environment: environment)
        XCTAssertEqual(configuration.cacheDirectory.path, "/fast/cache")
        XCTAssertEqual(configuration.endpoint.absoluteString, "http://127.0.0.1:8080")
        XCTAssertEqual(configuration.token, "hf_abc")
        XCTAssertTrue(configuration.offline)
        for off in ["0", "false", "no", ""] {
            environment["HF_HUB_OFFLINE"] = off
            XCTAssertFalse(try HubConfiguration(environment: environment).offline, off)
        }
    }

    func testTokenFileWrittenByLogin() throws {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("phi-hf-home-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        try Data("hf_from_file\n".utf8).write(to: home.appendingPathComponent("token"))
        XCTAssertEqual(try HubConfiguration(environment: ["HF_HOME": home.path]).token, "hf_from_file")
        XCTAssertEqual(
            try HubConfiguration(environment: ["HF_HOME": home.path, "HF_TOKEN": "hf_env"]).token, "hf_env")
    }

    func testBadEndpointIsRejected() {
        XCTAssertThrowsError(try HubConfiguration(environment: ["HF_ENDPOINT": "ftp://example.com"])) { error in
            XCTAssertTrue("\(error)".contains("HF_ENDPOINT is 'ftp://example.com'"), "\(error)")
        }
    }
}
