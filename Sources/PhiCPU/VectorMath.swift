import Foundation

/// SIMD loops over Float32 vectors used by the CPU kernels.
enum VectorMath {
    /// Σ a[i] · b[i].
    @inline(__always)
    static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, count: Int) -> Float {
        var sum = SIMD8<Float>()
        var i = 0
        let ra = UnsafeRawPointer(a), rb = UnsafeRawPointer(b)
        while i + 8 <= count {
            sum += ra.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
                * rb.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
            i += 8
        }
        var total = sum.sum()
        while i < count { total += a[i] * b[i]; i += 1 }
        return total
    }

    /// y[i] += alpha · x[i].
    @inline(__always)
    static func addScaled(_ x: UnsafePointer<Float>, _ alpha: Float, into y: UnsafeMutablePointer<Float>, count: Int) {
        var i = 0
        let rx = UnsafeRawPointer(x), ry = UnsafeMutableRawPointer(y)
        let a = SIMD8<Float>(repeating: alpha)
        while i + 8 <= count {
            let sum = ry.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
                + a * rx.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
            ry.storeBytes(of: sum, toByteOffset: i * 4, as: SIMD8<Float>.self)
            i += 8
        }
        while i < count { y[i] += alpha * x[i]; i += 1 }
    }

    /// Σ x[i]².
    @inline(__always)
    static func sumOfSquares(_ x: UnsafePointer<Float>, count: Int) -> Float { dot(x, x, count: count) }
}
