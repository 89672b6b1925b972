import Foundation
import PhiFormats
import TestSupport
import XCTest

/// GGUF tensor types converted to the engine layout, against `gguf.quants.dequantize`
/// (Tests/Fixtures/tiny-gguf, written by Scripts/fixtures/make_gguf_references.py).
final class GGUFConversionTests: XCTestCase {
    struct Expected: Decodable {
        let type: String
        let values: [Float]
    }

    func testEveryTypeMatchesGGUFPackage() throws {
        let directory = TestPaths.fixtures.appendingPathComponent("tiny-gguf")
        let file = try GGUFFile(contentsOf: try TestPaths.require(directory.appendingPathComponent("types.gguf"),
                                                                 hint: "run Scripts/fixtures/make_gguf_references.py"))
        let expected = try JSONDecoder().decode([String: Expected].self,
                                                from: Data(contentsOf: directory.appendingPathComponent("types.json")))
        XCTAssertEqual(file.metadata["phi_gpu.fixture"]?.stringValue, "one matrix per tensor type")
        // (bits, group size, allowed error as a fraction of the largest |w|): exact for the
        // block formats that are affine already; K formats round d·sc to Float16; floats are requantized.
        let layouts: [String: (Int, Int, Float)] = [
            "q4_0": (4, 32, 0), "q4_1": (4, 32, 0), "q8_0": (8, 32, 0),
            "q4_k": (4, 32, 1.0 / 1024), "q6_k": (8, 16, 1.0 / 1024),
            "f32": (8, 32, 1.0 / 200), "f16": (8, 32, 1.0 / 200), "bf16": (8, 32, 1.0 / 200),
        ]
        for (name, (bits, group, tolerance)) in layouts {
            let reference = try XCTUnwrap(expected[name], name)
            let info = try XCTUnwrap(file.tensor(named: name), name)
            XCTAssertEqual(info.type.description, reference.type, name)
            XCTAssertEqual(info.shape, [256, 3], name)
            let matrix = try file.matrix(named: name)
            XCTAssertEqual([matrix.rows, matrix.columns, matrix.bits, matrix.groupSize], [3, 256, bits, group], name)
            let largest = reference.values.map(abs).max() ?? 0
            let error = maxAbsoluteDifference(matrix.dequantized(), reference.values)
            XCTAssertLessThanOrEqual(error, tolerance * largest, "\(name): error \(error), largest |w| \(largest)")
            if tolerance > 0 { XCTAssertGreaterThan(largest, 0, name) }
        }
        let norm = try file.vector(named: "norm", count: 256)
        XCTAssertEqual(norm.withFloats { Array($0) }, expected["norm"]?.values)
        XCTAssertThrowsError(try file.vector(named: "norm", count: 255)) { error in
            XCTAssertTrue("\(error)".contains("'norm'") && "\(error)".contains("types.gguf"), "\(error)")
        }
        XCTAssertThrowsError(try file.matrix(named: "absent")) { error in
            XCTAssertTrue("\(error)".contains("'absent'") && "\(error)".contains("missing"), "\(error)")
        }
        XCTAssertThrowsError(try file.matrix(named: "norm")) { error in
            XCTAssertTrue("\(error)".contains("2 dimensions"), "\(error)")
        }
    }

    func testWideningAndStackingAreExact() throws {
        let file = TestPaths.fixtures.appendingPathComponent("tiny-gguf/types.gguf")
        let gguf = try GGUFFile(contentsOf: try TestPaths.require(file, hint: "run Scripts/fixtures/make_gguf_references.py"))
        let q4 = try gguf.matrix(named: "q4_1"), q8 = try gguf.matrix(named: "q8_0"), q6 = try gguf.matrix(named: "q6_k")
        let stacked = try QuantizedMatrix.stackingRows([q4, q8, q6], name: "stack", file: file)
        XCTAssertEqual([stacked.rows, stacked.columns, stacked.bits, stacked.groupSize], [9, 256, 8, 16])
        XCTAssertEqual(stacked.dequantized(), q4.dequantized() + q8.dequantized() + q6.dequantized())
        let reordered = stacked.reorderingRows([8, 0, 4, 1, 2, 3, 5, 6, 7])
        let rows = stacked.dequantized()
        let row = { (r: Int) in Array(rows[(r * 256)..<((r + 1) * 256)]) }
        XCTAssertEqual(reordered.dequantized(), [8, 0, 4, 1, 2, 3, 5, 6, 7].flatMap(row))
    }

    func testQuantizingFloatsIsCloseAndRejectsNonFinite() throws {
        var random = SeededRandom(seed: 7)
        let values = random.floats(4 * 96, in: -2...3)
        let file = URL(fileURLWithPath: "/nowhere/weights.safetensors")
        let matrix = try QuantizedMatrix.quantizing(values, rows: 4, columns: 96, tensor: "w", file: file)
        XCTAssertEqual([matrix.bits, matrix.groupSize], [8, 32])
        // Half a step of a group whose range is at most 5, plus Float16 rounding of bias and scale.
        XCTAssertLessThanOrEqual(maxAbsoluteDifference(matrix.dequantized(), values), 5 / 510 + 0.004)
        var bad = values
        bad[17] = .nan
        XCTAssertThrowsError(try QuantizedMatrix.quantizing(bad, rows: 4, columns: 96, tensor: "w", file: file)) { error in
            XCTAssertTrue("\(error)".contains("weights.safetensors: 'w'"), "\(error)")
        }
    }
}
