import Foundation

/// The memory read bandwidth the CPU backend can reach: all its threads summing a buffer far
/// larger than the caches, the CPU counterpart of `GPUBandwidth` (a ceiling for decode speed).
public enum CPUBandwidth {
    /// Bytes per second read by `threads` threads from a `byteCount`-byte buffer, best of `repeats`.
    public static func measure(threads: Int, byteCount: Int = 1 << 30, repeats: Int = 3) -> Double {
        let count = byteCount / MemoryLayout<SIMD8<Float>>.stride
        let buffer = UnsafeMutableBufferPointer<SIMD8<Float>>.allocate(capacity: count)  // (count) 32-byte vectors
        defer { buffer.deallocate() }
        let pool = WorkerPool(threads: threads)
        pool.parallelRanges(count) { range in
            for i in range { buffer[i] = SIMD8(repeating: Float(i & 7)) }  // touch every page first
        }
        let partials = UnsafeMutableBufferPointer<Float>.allocate(capacity: threads)  // (threads) keeps the sums live
        defer { partials.deallocate() }
        var best = 0.0
        for _ in 0..<repeats {
            let start = DispatchTime.now().uptimeNanoseconds
            let per = (count + threads - 1) / threads
            pool.parallelRanges(threads) { tasks in
                for task in tasks {
                    var a = SIMD8<Float>(), b = SIMD8<Float>(), c = SIMD8<Float>(), d = SIMD8<Float>()
                    var i = task * per
                    let end = min(count, i + per)
                    while i + 4 <= end {
                        a += buffer[i]; b += buffer[i + 1]; c += buffer[i + 2]; d += buffer[i + 3]
                        i += 4
                    }
                    while i < end { a += buffer[i]; i += 1 }
                    partials[task] = (a + b + c + d).sum()
                }
            }
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            best = max(best, Double(count * MemoryLayout<SIMD8<Float>>.stride) / seconds)
        }
        return best
    }
}
