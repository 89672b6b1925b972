/// Byte-pair merging of one word: repeatedly joins the adjacent pair with the lowest merge rank,
/// the leftmost one among equal ranks, until no adjacent pair has a merge (as the Hugging Face
/// `tokenizers` BPE model and llama.cpp's SentencePiece tokenizer do).
enum BytePairMerger {
    /// Words up to this many symbols are merged by rescanning (fast for short words); longer ones
    /// use a heap of candidate pairs (n log n).
    static let rescanLimit = 48

    /// Merges `symbols` (token ids, in order) in place.
    static func merge(_ symbols: inout [Int32], merges: MergeTable) {
        if symbols.count < 2 { return }
        if symbols.count <= rescanLimit {
            mergeByRescanning(&symbols, merges: merges)
        } else {
            mergeWithHeap(&symbols, merges: merges)
        }
    }

    static func mergeByRescanning(_ symbols: inout [Int32], merges: MergeTable) {
        while symbols.count >= 2 {
            var bestRank = Int32.max
            var bestIndex = -1
            var bestMerged: Int32 = 0
            for index in 0..<(symbols.count - 1) {
                if let found = merges.lookup(symbols[index], symbols[index + 1]), found.rank < bestRank {
                    bestRank = found.rank
                    bestIndex = index
                    bestMerged = found.merged
                }
            }
            if bestIndex < 0 { return }
            symbols[bestIndex] = bestMerged
            symbols.remove(at: bestIndex + 1)
        }
    }

    static func mergeWithHeap(_ symbols: inout [Int32], merges: MergeTable) {
        let count = symbols.count
        var next = [Int32](unsafeUninitializedCapacity: count) { buffer, initialized in  // (symbols) next live index, -1 at end
            for index in 0..<count { buffer[index] = Int32(index + 1) }
            buffer[count - 1] = -1
            initialized = count
        }
        var previous = [Int32](unsafeUninitializedCapacity: count) { buffer, initialized in  // (symbols) previous live index
            for index in 0..<count { buffer[index] = Int32(index - 1) }
            initialized = count
        }
        var alive = [Bool](repeating: true, count: count)  // (symbols)
        var heap = MinHeap()                                // (candidate pairs) rank << 32 | left index
        for index in 0..<(count - 1) {
            if let found = merges.lookup(symbols[index], symbols[index + 1]) {
                heap.push(UInt64(found.rank) << 32 | UInt64(index))
            }
        }
        while let top = heap.pop() {
            let rank = Int32(top >> 32)
            let left = Int(top & 0xFFFF_FFFF)
            guard alive[left], next[left] >= 0 else { continue }
            let right = Int(next[left])
            guard let found = merges.lookup(symbols[left], symbols[right]), found.rank == rank else { continue }
            symbols[left] = found.merged
            alive[right] = false
            let after = next[right]
            next[left] = after
            if after >= 0 { previous[Int(after)] = Int32(left) }
            let before = previous[left]
            if before >= 0, let pair = merges.lookup(symbols[Int(before)], symbols[left]) {
                heap.push(UInt64(pair.rank) << 32 | UInt64(before))
            }
            if after >= 0, let pair = merges.lookup(symbols[left], symbols[Int(after)]) {
                heap.push(UInt64(pair.rank) << 32 | UInt64(left))
            }
        }
        var write = 0
        for index in 0..<count where alive[index] {
            symbols[write] = symbols[index]
            write += 1
        }
        symbols.removeLast(count - write)
    }
}

/// A binary min-heap of 64-bit keys.
struct MinHeap {
    private var items: [UInt64] = []

    mutating func push(_ item: UInt64) {
        items.append(item)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            if items[parent] <= items[child] { break }
            items.swapAt(parent, child)
            child = parent
        }
    }

    mutating func pop() -> UInt64? {
        guard let last = items.popLast() else { return nil }
        if items.isEmpty { return last }
        let top = items[0]
        items[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            if left >= items.count { break }
            let right = left + 1
            let smaller = right < items.count && items[right] < items[left] ? right : left
            if items[parent] <= items[smaller] { break }
            items.swapAt(parent, smaller)
            parent = smaller
        }
        return top
    }
}
