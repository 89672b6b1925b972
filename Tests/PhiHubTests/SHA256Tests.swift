import Foundation
import TestSupport
import XCTest

@testable import PhiHub

final class SHA256Tests: XCTestCase {
    /// FIPS 180-4 / NIST example vectors.
    func testKnownVectors() {
        XCTAssertEqual(
            SHA256.hexDigest(of: Array("".utf8)),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(
            SHA256.hexDigest(of: Array("abc".utf8)),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(
            SHA256.hexDigest(of: Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(
            SHA256.hexDigest(
                of: Array(
                    ("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                        + "mnopqrstnopqrstu").utf8)),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    /// One million `a`, fed in uneven pieces.
    func testMillionAInPieces() {
        var hasher = SHA256()
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 1024)
        var fed = 0
        var size = 1
        while fed < 1_000_000 {
            let count = min(size, 1_000_000 - fed)
            hasher.update(Array(piece[0..<count]))
            fed += count
            size = size % 997 + 7
        }
        XCTAssertEqual(hasher.finalizeHex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Lengths around the padding boundaries (55, 56, 63, 64 ...) against coreutils' `sha256sum`,
    /// and the same digest whatever the split of the input.
    func testAgainstSha256sumAtPaddingBoundaries() throws {
        let tool = URL(fileURLWithPath: "/usr/bin/sha256sum")
        _ = try TestPaths.require(tool, hint: "install coreutils (apt-get install coreutils)")
        var random = SeededRandom(seed: 42)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("phi-sha-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let lengths = [1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4099]
        var paths: [String] = []
        var digests: [String] = []
        for length in lengths {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            let file = directory.appendingPathComponent("\(length).bin")
            try Data(bytes).write(to: file)
            paths.append(file.path)
            digests.append(SHA256.hexDigest(of: bytes))
            let split = Int.random(in: 0...length, using: &random)
            var hasher = SHA256()
            hasher.update(Array(bytes[0..<split]))
            hasher.update(Array(bytes[split...]))
            XCTAssertEqual(hasher.finalizeHex(), digests.last, "split at \(split) of \(length)")
        }
        let output = String(decoding: try Executables.spawn(tool, paths).stdout, as: UTF8.self)
        let expected = output.split(separator: "\n").map { String($0.prefix(64)) }
        XCTAssertEqual(expected, digests)
    }
}
