import Foundation
import PhiFormats
import TestSupport
import XCTest

/// Safetensors reading: dtypes, header validation with errors naming file and tensor, shards.
final class SafetensorsFileTests: XCTestCase {
    var scratch: URL!

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("phi-gpu-st-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: scratch)
    }

    func testReadsEachDType() throws {
        let values: [Float] = [1, -2, 0.5, 0.25, 3, -0.125]  // exact in F16 and BF16
        var writer = SafetensorsWriter()
        writer.add("f32", shape: [2, 3], float32: values)
        writer.add("f16", shape: [2, 3], float16: values)
        writer.add("bf16", shape: [6], bfloat16: values)
        writer.add("u32", shape: [2], uint32: [0xDEAD_BEEF, 7])
        let url = scratch.appendingPathComponent("all.safetensors")
        try writer.write(to: url)
        let file = try SafetensorsFile(contentsOf: url)
        XCTAssertEqual(file.metadata, ["format": "mlx"])
        XCTAssertEqual(Set(file.tensors.keys), ["f32", "f16", "bf16", "u32"])
        for (name, encoding) in [("f32", FloatEncoding.f32), ("f16", .f16), ("bf16", .bf16)] {
            let info = try XCTUnwrap(file.tensors[name])
            XCTAssertEqual(file.data(of: info).decodedFloats(encoding), values, name)
            XCTAssertEqual(file.data(of: info).asFloat16(encoding).withHalves { $0.map(Float.init) }, values, name)
        }
        XCTAssertEqual(file.tensors["f32"]?.shape, [2, 3])
        XCTAssertEqual(file.data(of: try XCTUnwrap(file.tensors["u32"])).aligned(to: 4).withWords { Array($0) }, [0xDEAD_BEEF, 7])
    }

    func testHeaderValidationNamesFileAndTensor() throws {
        func check(_ name: String, _ edit: (inout SafetensorsWriter) -> Void, mentions: [String]) throws {
            var writer = SafetensorsWriter()
            writer.add("a.weight", shape: [2, 2], float32: [1, 2, 3, 4])
            writer.add("b.weight", shape: [4], float16: [1, 2, 3, 4])
            edit(&writer)
            let url = scratch.appendingPathComponent(name)
            try writer.write(to: url)
            XCTAssertThrowsError(try SafetensorsFile(contentsOf: url), name) { error in
                for part in [name] + mentions { XCTAssertTrue("\(error)".contains(part), "'\(error)' should mention \(part)") }
            }
        }
        try check("past-end.safetensors", { $0.header["b.weight"] = ["dtype": "F16", "shape": [4], "data_offsets": [16, 40]] },
                  mentions: ["'b.weight'", "past the end"])
        try check("overlap.safetensors", { $0.header["b.weight"] = ["dtype": "F16", "shape": [4], "data_offsets": [8, 16]] },
                  mentions: ["overlap", "a.weight"])
        try check("dtype.safetensors", { $0.header["a.weight"] = ["dtype": "F8_E4M3", "shape": [2, 2], "data_offsets": [0, 16]] },
                  mentions: ["'a.weight'", "F8_E4M3"])
        try check("shape.safetensors", { $0.header["a.weight"] = ["dtype": "F32", "shape": [2, 3], "data_offsets": [0, 16]] },
                  mentions: ["'a.weight'", "shape [2, 3]"])
        try check("offsets.safetensors", { $0.header["a.weight"] = ["dtype": "F32", "shape": [2, 2], "data_offsets": [16, 0]] },
                  mentions: ["'a.weight'", "data_offsets"])
        try check("negative.safetensors", { $0.header["a.weight"] = ["dtype": "F32", "shape": [-2, 2], "data_offsets": [0, 16]] },
                  mentions: ["'a.weight'", "shape"])

        let huge = scratch.appendingPathComponent("huge-header.safetensors")
        var bytes = Data()
        withUnsafeBytes(of: UInt64(1 << 40).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(Data("{}".utf8))
        try bytes.write(to: huge)
        XCTAssertThrowsError(try SafetensorsFile(contentsOf: huge)) { XCTAssertTrue("\($0)".contains("header length"), "\($0)") }
        let garbage = scratch.appendingPathComponent("garbage.safetensors")
        bytes = Data()
        withUnsafeBytes(of: UInt64(4).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(Data("{{{{".utf8))
        try bytes.write(to: garbage)
        XCTAssertThrowsError(try SafetensorsFile(contentsOf: garbage)) { XCTAssertTrue("\($0)".contains("not valid JSON"), "\($0)") }
    }

    func testShardedCollection() throws {
        var first = SafetensorsWriter(), second = SafetensorsWriter()
        first.add("x.weight", shape: [2], float32: [1, 2])
        second.add("y.weight", shape: [3], float32: [3, 4, 5])
        try first.write(to: scratch.appendingPathComponent("model-00001-of-00002.safetensors"))
        try second.write(to: scratch.appendingPathComponent("model-00002-of-00002.safetensors"))
        let index: [String: Any] = ["metadata": ["total_size": 20], "weight_map": [
            "x.weight": "model-00001-of-00002.safetensors", "y.weight": "model-00002-of-00002.safetensors"]]
        try JSONSerialization.data(withJSONObject: index).write(to: scratch.appendingPathComponent("model.safetensors.index.json"))
        let collection = try SafetensorsCollection(directory: scratch)
        XCTAssertEqual(collection.tensorNames, ["x.weight", "y.weight"])
        XCTAssertEqual(collection.tensor(named: "y.weight")?.file.url.lastPathComponent, "model-00002-of-00002.safetensors")
        XCTAssertEqual(try collection.vector("y.weight", count: 3).withFloats { Array($0) }, [3, 4, 5])
        XCTAssertThrowsError(try collection.vector("y.weight", count: 4)) { XCTAssertTrue("\($0)".contains("'y.weight'"), "\($0)") }
        XCTAssertThrowsError(try collection.vector("z.weight", count: 1)) { XCTAssertTrue("\($0)".contains("'z.weight'"), "\($0)") }
    }
}
