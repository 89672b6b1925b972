import Foundation
import PhiGPU
import TestSupport
import VulkanKit
import XCTest

/// The GPU context the kernel tests share: llvmpipe in CI (which must exist there), with
/// validation layers when PHI_GPU_VALIDATE=1.
enum TestGPU {
    nonisolated(unsafe) private static var cached: GPUContext?

    static func context() throws -> GPUContext {
        if let cached { return cached }
        do {
            let made = try GPUContext(allowCPUDevices: true)
            cached = made
            return made
        } catch let error as GPUUnavailable where !TestPaths.isCI {
            throw XCTSkip("\(error)")
        }
    }

    /// Fails the test if the validation layer reported errors.
    static func assertNoValidationErrors(file: StaticString = #filePath, line: UInt = #line) throws {
        let instance = try context().instance
        XCTAssertEqual(instance.validationErrorCount, 0, instance.validationErrors.joined(separator: "\n"), file: file, line: line)
    }
}

/// The quiet NaN that output buffers are filled with before a kernel runs, so unwritten elements show.
let poison: UInt32 = 0x7FC0_0BAD

final class RMSNormKernelTests: XCTestCase {
    /// CPU reference (float64 accumulation).
    func referenceRMSNorm(_ x: [Float], weight: [Float], rows: Int, columns: Int, epsilon: Float) -> [Float] {
        var y = [Float](repeating: 0, count: x.count)
        for r in 0..<rows {
            let row = x[(r * columns)..<((r + 1) * columns)]
            let meanSquare = row.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(columns)
            let scale = Float(1 / (meanSquare + Double(epsilon)).squareRoot())
            for c in 0..<columns { y[r * columns + c] = x[r * columns + c] * scale * weight[c] }
        }
        return y
    }

    /// Tolerance: 1e-5 relative to the output's magnitude (float32 sums over ≤ 8192 terms).
    func testMatchesTheCPUOnRandomInputsAtManyShapes() throws {
        let gpu = try TestGPU.context()
        let kernel = try RMSNormKernel(context: gpu)
        var random = SeededRandom(seed: UInt64(Date().timeIntervalSince1970))
        let shapes = [(1, 3072), (3, 3072), (1, 576), (5, 1000), (2, 7), (1, 8192), (17, 3)]
        for (rows, columns) in shapes {
            let x = random.floats(rows * columns, in: -3...3)
            let weight = random.floats(columns, in: 0.5...1.5)
            let epsilon: Float = 1e-5
            let input = try gpu.buffer(copying: x, label: "x")
            let weights = try gpu.buffer(copying: weight, label: "weight")
            let output = try gpu.buffer(Float.self, count: rows * columns, label: "y")
            try output.fill(poison)
            try gpu.device.run { commands in
                try kernel.record(into: commands, input: input, weight: weights, output: output,
                                  rows: rows, columns: columns, epsilon: epsilon)
            }
            let got = try output.read(Float.self, count: rows * columns)
            let expected = referenceRMSNorm(x, weight: weight, rows: rows, columns: columns, epsilon: epsilon)
            XCTAssertFalse(got.contains { $0.isNaN }, "unwritten outputs at \(rows)x\(columns)")
            let scale = expected.map(abs).max() ?? 1
            XCTAssertLessThanOrEqual(maxAbsoluteDifference(got, expected), 1e-5 * max(scale, 1), "\(rows)x\(columns)")
        }
        try TestGPU.assertNoValidationErrors()
    }

    func testEveryPushConstantStructHasTheSizeOfItsGLSLBlock() throws {
        XCTAssertFalse(pushConstantLayouts.isEmpty)
        for (shader, swiftSize) in pushConstantLayouts {
            let reflected = try SPIRVReflection(words: shader.words, name: shader.name)
            XCTAssertEqual(reflected.pushConstantSize, swiftSize, "push constants of \(shader.name)")
        }
    }
}
