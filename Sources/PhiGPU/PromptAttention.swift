/// The shape of the prompt attention (Shaders/attention.comp) as its variant in
/// Shaders/variants.json defines it (`THREADS`, `K_BLOCK`, `MAX_HEAD_DIM`; a test compares them):
/// what `GPUBackend` dispatches and checks a device against.
enum PromptAttention {
    /// Invocations per workgroup.
    static let threads = 256
    /// Keys staged per step.
    static let keyBlock = 16
    /// The largest head dimension it takes (a multiple of 8).
    static let maxHeadDimension = 128
    /// Queries per workgroup: 8 invocations each.
    static var queries: Int { threads / 8 }
    /// Shared memory it declares: the staged queries (a vec2 per pair of dimensions) and keys and
    /// values (a Float16 pair per word), rows padded by one element; the block's probabilities
    /// (padded); each invocation's running max and sum.
    static var sharedBytes: Int {
        let stride = maxHeadDimension / 2 + 1
        return queries * stride * 8 + 2 * keyBlock * stride * 4 + queries * (keyBlock + 1) * 4 + 2 * threads * 4
    }
}
