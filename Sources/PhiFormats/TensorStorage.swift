import Foundation

/// Bytes of one tensor: either a view into a memory-mapped checkpoint file (kept alive by
/// `owner`) or an array owned here after conversion. Read-only once made.
public struct TensorStorage: @unchecked Sendable {
    /// Keeps the mapping (or the converted bytes) alive for as long as the view exists.
    public let owner: AnyObject
    /// The bytes, valid while `owner` lives.
    public let bytes: UnsafeRawBufferPointer

    public init(owner: AnyObject, bytes: UnsafeRawBufferPointer) {
        self.owner = owner
        self.bytes = bytes
    }

    /// Storage that owns a copy of `array`'s elements.
    public init<T>(copying array: [T]) {
        let box = OwnedBytes(byteCount: array.count * MemoryLayout<T>.stride)
        array.withUnsafeBytes { source in
            if let base = source.baseAddress { box.pointer.copyMemory(from: base, byteCount: source.count) }
        }
        self.owner = box
        self.bytes = UnsafeRawBufferPointer(start: box.pointer, count: box.byteCount)
    }

    public var byteCount: Int { bytes.count }

    public func withWords<R>(_ body: (UnsafeBufferPointer<UInt32>) throws -> R) rethrows -> R {
        try withExtendedLifetime(owner) { try body(bytes.bindMemory(to: UInt32.self)) }
    }

    public func withHalves<R>(_ body: (UnsafeBufferPointer<Float16>) throws -> R) rethrows -> R {
        try withExtendedLifetime(owner) { try body(bytes.bindMemory(to: Float16.self)) }
    }

    public func withFloats<R>(_ body: (UnsafeBufferPointer<Float>) throws -> R) rethrows -> R {
        try withExtendedLifetime(owner) { try body(bytes.bindMemory(to: Float.self)) }
    }
}

/// A heap allocation of bytes, 64-byte aligned, freed when the last storage referring to it goes.
public final class OwnedBytes: @unchecked Sendable {
    public let pointer: UnsafeMutableRawPointer
    public let byteCount: Int

    public init(byteCount: Int) {
        self.byteCount = byteCount
        self.pointer = UnsafeMutableRawPointer.allocate(byteCount: max(byteCount, 1), alignment: 64)
    }

    deinit { pointer.deallocate() }
}
