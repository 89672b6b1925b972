import Foundation

/// What `score` reports for a sequence: per position the top-k logits and log-sum-exp, and the
/// perplexity of the sequence under the model.
public struct Score: Sendable, Codable {
    /// One position's summary.
    public struct Position: Sendable, Codable {
        /// The most likely next ids, best first.
        public var topIds: [Int32]
        /// Their logits.
        public var topLogits: [Float]
        /// log Σ exp(logits) over the whole vocabulary.
        public var logSumExp: Float
    }

    public var ids: [Int32]
    /// One per id of `ids`: the prediction made after reading it.
    public var positions: [Position]
    /// exp(−mean log p(ids[i + 1] | ids[...i])) over the ids after the first; nil for one id.
    public var perplexity: Double?

    /// Summarises (ids.count, vocabularySize) `logits`.
    public init(ids: [Int32], logits: [Float], vocabularySize: Int, topK: Int) {
        self.ids = ids
        var positions: [Position] = []
        var negativeLogLikelihood = 0.0
        for p in ids.indices {
            let row = logits[(p * vocabularySize)..<((p + 1) * vocabularySize)]
            let peak = row.max() ?? 0
            let logSumExp = Double(peak) + log(row.reduce(0.0) { $0 + exp(Double($1 - peak)) })
            let top = row.indices.sorted { row[$0] > row[$1] || (row[$0] == row[$1] && $0 < $1) }
                .prefix(max(topK, 0))
            positions.append(Position(topIds: top.map { Int32($0 - p * vocabularySize) }, topLogits: top.map { row[$0] },
                                      logSumExp: Float(logSumExp)))
            if p + 1 < ids.count {
                negativeLogLikelihood += logSumExp - Double(row[p * vocabularySize + Int(ids[p + 1])])
            }
        }
        self.positions = positions
        perplexity = ids.count > 1 ? exp(negativeLogLikelihood / Double(ids.count - 1)) : nil
    }
}
