import Foundation

/// Prints `Encodable` values as one JSON document on standard output (sorted keys, snake_case).
enum JSONOutput {
    static func print<T: Encodable>(_ value: T, pretty: Bool = true) throws {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        let data = try encoder.encode(value)
        Console.out(String(decoding: data, as: UTF8.self) + "\n")
    }
}
