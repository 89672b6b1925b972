import Foundation
import PhiFormats
import PhiModel
import TestSupport
import XCTest

/// Truncates files and flips bytes at seeded random offsets of a safetensors file, a GGUF file and
/// config.json: loading must fail with a thrown error (never a crash) whenever the damage can be
/// seen, i.e. always for truncation and for the structural bytes of headers. Flipped bytes that
/// only change a weight value or a free-text string cannot be detected (the formats carry no
/// checksums; the hub client checks sha256 on download): those must load or throw, not crash.
final class CorruptedFileTests: XCTestCase {
    var scratch: URL!
    var random = SeededRandom(seed: 20241121)

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("phi-gpu-corrupt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Loads `target` after each damage; returns how many damaged copies loaded anyway.
    func damage(_ file: URL, load target: URL, truncations: Int, truncateBelow: Int,
                flips: Int, flipRange: Range<Int>) throws -> Int {
        let original = try Data(contentsOf: file)
        for _ in 0..<truncations {
            let length = Int.random(in: 0..<truncateBelow, using: &random)
            try original.prefix(length).write(to: file)
            XCTAssertThrowsError(try CheckpointLoader.load(from: target), "\(file.lastPathComponent) truncated to \(length) bytes") { error in
                XCTAssertTrue("\(error)".contains(file.lastPathComponent) || "\(error)".contains(target.lastPathComponent), "\(error)")
            }
        }
        var loaded = 0
        for _ in 0..<flips {
            var bytes = original
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let offset = Int.random(in: flipRange, using: &random)
                bytes[offset] ^= UInt8.random(in: 1...255, using: &random)
            }
            try bytes.write(to: file)
            if (try? CheckpointLoader.load(from: target)) != nil { loaded += 1 }
        }
        try original.write(to: file)
        XCTAssertNoThrow(try CheckpointLoader.load(from: target), "the restored file loads again")
        return loaded
    }

    func testCorruptedSafetensorsAndConfig() throws {
        let source = try TestPaths.require(TestPaths.fixtures.appendingPathComponent("tiny-phi4-mini-4bit"),
                                           hint: "run Scripts/fixtures/make_tiny_models.py")
        let directory = scratch.appendingPathComponent("model")
        try FileManager.default.copyItem(at: source, to: directory)
        let weights = directory.appendingPathComponent("model.safetensors")
        let size = try Data(contentsOf: weights).count
        let headerEnd = 8 + Int(try Data(contentsOf: weights).prefix(8).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) })
        let headerLoads = try damage(weights, load: directory, truncations: 25, truncateBelow: size,
                                     flips: 25, flipRange: 0..<headerEnd)
        XCTAssertLessThanOrEqual(headerLoads, 5, "most header flips must be caught")

        let config = directory.appendingPathComponent("config.json")
        let configSize = try Data(contentsOf: config).count
        _ = try damage(config, load: directory, truncations: 25, truncateBelow: configSize,
                       flips: 25, flipRange: 0..<configSize)
    }

    func testCorruptedGGUF() throws {
        let source = try TestPaths.require(TestPaths.fixtures.appendingPathComponent("tiny-gguf/tiny-phi3-q8.gguf"),
                                           hint: "run Scripts/fixtures/make_gguf_references.py")
        let file = scratch.appendingPathComponent("model.gguf")
        try FileManager.default.copyItem(at: source, to: file)
        let gguf = try GGUFFile(contentsOf: file)
        let dataEnd = gguf.dataOffset + gguf.tensors.map { $0.offset + ($0.byteCount ?? 0) }.max()!
        let headerEnd = gguf.dataOffset
        let headerLoads = try damage(file, load: file, truncations: 40, truncateBelow: dataEnd,
                                     flips: 60, flipRange: 0..<headerEnd)
        XCTAssertLessThanOrEqual(headerLoads, 6, "most header flips must be caught")
        // Flips anywhere (mostly weights): never a crash; non-finite scales are caught.
        _ = try damage(file, load: file, truncations: 0, truncateBelow: 1, flips: 30, flipRange: 0..<dataEnd)
    }
}
