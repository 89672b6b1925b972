/// SHA-256 (FIPS 180-4), fed incrementally, so that a download is hashed as its bytes arrive.
///
/// The hub names every large (LFS) file by the SHA-256 of its content; this is how a finished
/// download is checked before it is moved into the cache.
public struct SHA256: Sendable {
    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    /// The eight working words h0...h7.
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
    )
    /// Bytes of a block not yet complete. (64,) UInt8, of which `pendingCount` are used.
    private var pending = [UInt8](repeating: 0, count: 64)
    private var pendingCount = 0
    /// Total message length so far, in bytes.
    private var messageLength: UInt64 = 0

    public init() {}

    /// The digest of `bytes` as 64 lowercase hexadecimal characters.
    public static func hexDigest<Bytes: Sequence>(of bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var hasher = SHA256()
        hasher.update(Array(bytes))
        return hasher.finalizeHex()
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Feeds `bytes`; whole 64-byte blocks are compressed straight from the caller's memory.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var cursor = bytes.baseAddress, bytes.count > 0 else { return }
        var remaining = bytes.count
        messageLength &+= UInt64(remaining)
        if pendingCount > 0 {
            let take = min(64 - pendingCount, remaining)
            pending.withUnsafeMutableBytes { buffer in
                buffer.baseAddress!.advanced(by: pendingCount).copyMemory(from: cursor, byteCount: take)
            }
            pendingCount += take
            cursor += take
            remaining -= take
            if pendingCount < 64 { return }
            pending.withUnsafeBytes { compress(blocks: $0.baseAddress!, count: 1) }
            pendingCount = 0
        }
        let wholeBlocks = remaining / 64
        if wholeBlocks > 0 {
            compress(blocks: cursor, count: wholeBlocks)
            cursor += wholeBlocks * 64
            remaining -= wholeBlocks * 64
        }
        if remaining > 0 {
            pending.withUnsafeMutableBytes { $0.baseAddress!.copyMemory(from: cursor, byteCount: remaining) }
            pendingCount = remaining
        }
    }

    /// Pads the message and returns the 32-byte digest. The hasher is spent afterwards.
    public mutating func finalize() -> [UInt8] {
        let bitLength = messageLength &* 8
        var padding: [UInt8] = [0x80]
        let afterMarker = (pendingCount + 1) % 64
        let zeros = afterMarker <= 56 ? 56 - afterMarker : 120 - afterMarker
        padding += [UInt8](repeating: 0, count: zeros)
        for shift in stride(from: 56, through: 0, by: -8) { padding.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        let savedLength = messageLength
        update(padding)
        messageLength = savedLength
        let words = [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7]
        return words.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> UInt32(24 - 8 * $0)) } }
    }

    /// `finalize()` as 64 lowercase hexadecimal characters.
    public mutating func finalizeHex() -> String {
        let hexDigits = Array("0123456789abcdef")
        return String(finalize().flatMap { [hexDigits[Int($0 >> 4)], hexDigits[Int($0 & 15)]] })
    }

    /// Compresses `count` consecutive 64-byte blocks starting at `blocks`.
    private mutating func compress(blocks: UnsafeRawPointer, count: Int) {
        var (h0, h1, h2, h3, h4, h5, h6, h7) = state
        Self.roundConstants.withUnsafeBufferPointer { k in
            // (64,) UInt32: the message schedule of one block.
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                for blockIndex in 0..<count {
                    let block = blocks + blockIndex * 64
                    for t in 0..<16 {
                        w[t] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: t * 4, as: UInt32.self))
                    }
                    for t in 16..<64 {
                        let x = w[t - 15], y = w[t - 2]
                        let s0 = x.rotatedRight(7) ^ x.rotatedRight(18) ^ (x >> 3)
                        let s1 = y.rotatedRight(17) ^ y.rotatedRight(19) ^ (y >> 10)
                        w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
                    }
                    var a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7
                    for t in 0..<64 {
                        let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                        let choice = (e & f) ^ (~e & g)
                        let temp1 = h &+ s1 &+ choice &+ k[t] &+ w[t]
                        let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                        let majority = (a & b) ^ (a & c) ^ (b & c)
                        let temp2 = s0 &+ majority
                        h = g; g = f; f = e; e = d &+ temp1
                        d = c; c = b; b = a; a = temp1 &+ temp2
                    }
                    h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d; h4 &+= e; h5 &+= f; h6 &+= g; h7 &+= h
                }
            }
        }
        state = (h0, h1, h2, h3, h4, h5, h6, h7)
    }
}

extension UInt32 {
    @inline(__always)
    fileprivate func rotatedRight(_ count: UInt32) -> UInt32 { (self >> count) | (self << (32 - count)) }
}
