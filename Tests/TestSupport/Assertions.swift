import XCTest

/// Asserts that `got` equals `expected` within `relative` × the largest expected magnitude (at
/// least 1), and that no output is NaN (the poison of unwritten outputs); `what` names the case,
/// and a failure message adds `note` (e.g. the random seed).
public func assertClose(_ got: [Float], _ expected: [Float], relative: Float, _ what: String, note: String = "",
                        file: StaticString = #filePath, line: UInt = #line) {
    let suffix = note.isEmpty ? "" : "; \(note)"
    XCTAssertEqual(got.count, expected.count, "\(what)\(suffix)", file: file, line: line)
    guard got.count == expected.count else { return }
    XCTAssertFalse(got.contains { $0.isNaN }, "\(what): NaN (unwritten or invalid) outputs\(suffix)", file: file, line: line)
    let scale = max(1, expected.map(abs).max() ?? 1)
    let difference = maxAbsoluteDifference(got, expected)
    XCTAssertLessThanOrEqual(difference, relative * scale, "\(what): max difference \(difference)\(suffix)", file: file, line: line)
}

/// The tolerance of the GPU's one-token (decode) products against the CPU reference, relative to
/// the largest output: 4-bit weights are multiplied in Float16, x rounded to Float16 (measured
/// 3-5e-4), 8-bit ones in Float32.
public func decodeProductTolerance(bits: Int) -> Float { bits == 4 ? 1e-3 : 2e-4 }
