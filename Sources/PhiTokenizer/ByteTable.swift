import Foundation

/// An open-addressing hash map from byte strings to 32-bit values, stored flat so that lookups of
/// a slice of the input never allocate. Used for the vocabulary and for the per-call word cache.
struct ByteTable: Sendable {
    private var keyBytes: [UInt8] = []        // (total key bytes) every key, back to back
    private var keyStart: [Int32] = []        // (entries) offset of each key in keyBytes
    private var keyLength: [Int32] = []       // (entries) length of each key
    private(set) var values: [Int32] = []     // (entries) the value of each key
    private var slots: [Int32]                // (capacity) entry index + 1, 0 = empty
    private var mask: Int

    init(capacity: Int = 16) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        slots = [Int32](repeating: 0, count: size)
        mask = size - 1
    }

    var count: Int { values.count }

    @inline(__always)
    static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in bytes { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        return Int(truncatingIfNeeded: h ^ (h >> 29))
    }

    /// The value stored for `key`, or nil.
    func value(for key: UnsafeBufferPointer<UInt8>) -> Int32? {
        var slot = ByteTable.hash(key) & mask
        return keyBytes.withUnsafeBufferPointer { stored in
            while true {
                let entry = Int(slots[slot])
                if entry == 0 { return nil }
                let index = entry - 1
                let length = Int(keyLength[index])
                if length == key.count {
                    let start = Int(keyStart[index])
                    if length == 0 || memcmp(stored.baseAddress! + start, key.baseAddress!, length) == 0 {
                        return values[index]
                    }
                }
                slot = (slot + 1) & mask
            }
        }
    }

    func value(for key: [UInt8]) -> Int32? {
        key.withUnsafeBufferPointer { value(for: $0) }
    }

    /// Stores `value` for `key`; an existing key keeps its first value (returns false then).
    @discardableResult
    mutating func insert(_ key: UnsafeBufferPointer<UInt8>, value: Int32) -> Bool {
        if self.value(for: key) != nil { return false }
        if (values.count + 1) * 2 > slots.count { grow() }
        let index = values.count
        keyStart.append(Int32(keyBytes.count))
        keyLength.append(Int32(key.count))
        keyBytes.append(contentsOf: key)
        values.append(value)
        place(index: index, hash: ByteTable.hash(key))
        return true
    }

    @discardableResult
    mutating func insert(_ key: [UInt8], value: Int32) -> Bool {
        key.withUnsafeBufferPointer { insert($0, value: value) }
    }

    private mutating func place(index: Int, hash: Int) {
        var slot = hash & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = Int32(index + 1)
    }

    private mutating func grow() {
        let size = slots.count * 2
        slots = [Int32](repeating: 0, count: size)
        mask = size - 1
        keyBytes.withUnsafeBufferPointer { stored in
            for index in 0..<values.count {
                let key = UnsafeBufferPointer(
                    rebasing: stored[Int(keyStart[index])..<Int(keyStart[index] + keyLength[index])])
                place(index: index, hash: ByteTable.hash(key))
            }
        }
    }
}

/// An open-addressing hash map from a pair of token ids to the rank of their merge and the id it makes.
struct MergeTable: Sendable {
    private var keys: [UInt64]                // (capacity) left << 32 | right, or `empty`
    private var entries: [UInt64]             // (capacity) rank << 32 | merged id
    private var mask: Int
    private(set) var count = 0
    private static let empty = UInt64.max

    init(capacity: Int) {
        var size = 16
        while size < capacity * 2 { size <<= 1 }
        keys = [UInt64](repeating: MergeTable.empty, count: size)
        entries = [UInt64](repeating: 0, count: size)
        mask = size - 1
    }

    @inline(__always)
    private static func slot(_ key: UInt64, _ mask: Int) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask
    }

    /// (rank, merged id) of the pair, or nil when the two tokens never merge.
    @inline(__always)
    func lookup(_ left: Int32, _ right: Int32) -> (rank: Int32, merged: Int32)? {
        let key = UInt64(UInt32(bitPattern: left)) << 32 | UInt64(UInt32(bitPattern: right))
        var slot = MergeTable.slot(key, mask)
        while true {
            let stored = keys[slot]
            if stored == key {
                let entry = entries[slot]
                return (Int32(truncatingIfNeeded: entry >> 32), Int32(truncatingIfNeeded: entry & 0xFFFF_FFFF))
            }
            if stored == MergeTable.empty { return nil }
            slot = (slot + 1) & mask
        }
    }

    /// Adds a merge; a pair already present keeps its first (lowest) rank.
    mutating func insert(left: Int32, right: Int32, rank: Int32, merged: Int32) {
        if (count + 1) * 2 > keys.count { grow() }
        let key = UInt64(UInt32(bitPattern: left)) << 32 | UInt64(UInt32(bitPattern: right))
        var slot = MergeTable.slot(key, mask)
        while keys[slot] != MergeTable.empty {
            if keys[slot] == key { return }
            slot = (slot + 1) & mask
        }
        keys[slot] = key
        entries[slot] = UInt64(UInt32(bitPattern: rank)) << 32 | UInt64(UInt32(bitPattern: merged))
        count += 1
    }

    private mutating func grow() {
        let oldKeys = keys, oldEntries = entries
        keys = [UInt64](repeating: MergeTable.empty, count: oldKeys.count * 2)
        entries = [UInt64](repeating: 0, count: oldKeys.count * 2)
        mask = keys.count - 1
        for (key, entry) in zip(oldKeys, oldEntries) where key != MergeTable.empty {
            var slot = MergeTable.slot(key, mask)
            while keys[slot] != MergeTable.empty { slot = (slot + 1) & mask }
            keys[slot] = key
            entries[slot] = entry
        }
    }
}
