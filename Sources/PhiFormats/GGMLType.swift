/// A ggml tensor type number as stored in a GGUF file (known or not: unknown numbers are kept so
/// that a file can still be listed, and conversion says which type it cannot handle).
public struct GGMLType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let f32 = GGMLType(rawValue: 0)
    public static let f16 = GGMLType(rawValue: 1)
    public static let q4_0 = GGMLType(rawValue: 2)
    public static let q4_1 = GGMLType(rawValue: 3)
    public static let q5_0 = GGMLType(rawValue: 6)
    public static let q5_1 = GGMLType(rawValue: 7)
    public static let q8_0 = GGMLType(rawValue: 8)
    public static let q8_1 = GGMLType(rawValue: 9)
    public static let q2_K = GGMLType(rawValue: 10)
    public static let q3_K = GGMLType(rawValue: 11)
    public static let q4_K = GGMLType(rawValue: 12)
    public static let q5_K = GGMLType(rawValue: 13)
    public static let q6_K = GGMLType(rawValue: 14)
    public static let q8_K = GGMLType(rawValue: 15)
    public static let i8 = GGMLType(rawValue: 24)
    public static let i16 = GGMLType(rawValue: 25)
    public static let i32 = GGMLType(rawValue: 26)
    public static let i64 = GGMLType(rawValue: 27)
    public static let f64 = GGMLType(rawValue: 28)
    public static let bf16 = GGMLType(rawValue: 30)

    /// (elements per block, bytes per block) of the types whose layout is known here.
    private static let layouts: [UInt32: (elements: Int, bytes: Int, name: String)] = [
        0: (1, 4, "F32"), 1: (1, 2, "F16"), 2: (32, 18, "Q4_0"), 3: (32, 20, "Q4_1"),
        6: (32, 22, "Q5_0"), 7: (32, 24, "Q5_1"), 8: (32, 34, "Q8_0"), 9: (32, 36, "Q8_1"),
        10: (256, 84, "Q2_K"), 11: (256, 110, "Q3_K"), 12: (256, 144, "Q4_K"), 13: (256, 176, "Q5_K"),
        14: (256, 210, "Q6_K"), 15: (256, 292, "Q8_K"), 24: (1, 1, "I8"), 25: (1, 2, "I16"),
        26: (1, 4, "I32"), 27: (1, 8, "I64"), 28: (1, 8, "F64"), 30: (1, 2, "BF16"),
    ]

    /// Elements per block, or nil for a type number unknown here.
    public var blockElements: Int? { Self.layouts[rawValue]?.elements }
    /// Bytes per block, or nil for a type number unknown here.
    public var blockBytes: Int? { Self.layouts[rawValue]?.bytes }

    public var description: String { Self.layouts[rawValue]?.name ?? "ggml type \(rawValue)" }

    /// Bytes of a tensor with `elements` elements whose row length is `rowLength`, or nil when the
    /// type is unknown or rows are not whole blocks.
    public func byteCount(elements: Int, rowLength: Int) -> Int? {
        guard let layout = Self.layouts[rawValue], rowLength % layout.elements == 0 else { return nil }
        let (blocks, overflow) = (elements / layout.elements).multipliedReportingOverflow(by: layout.bytes)
        return overflow ? nil : blocks
    }
}
