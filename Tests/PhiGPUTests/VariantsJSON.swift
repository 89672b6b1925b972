import Foundation
import TestSupport

/// Shaders/variants.json as the build plugin reads it: every variant's name and defines.
struct VariantsJSON: Decodable {
    struct Variant: Decodable {
        var name: String
        var defines: [String: String]?
    }
    var variants: [Variant]

    static func load() throws -> VariantsJSON {
        let url = TestPaths.packageRoot.appendingPathComponent("Shaders/variants.json")
        return try JSONDecoder().decode(VariantsJSON.self, from: Data(contentsOf: url))
    }

    /// The defines of the variant called `name`, nil if there is no such variant.
    func defines(of name: String) -> [String: String]? {
        variants.first { $0.name == name }.map { $0.defines ?? [:] }
    }
}
