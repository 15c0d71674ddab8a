#if canImport(Glibc)
import Glibc
#endif

/// The offset in `bytes` of the first `byte` at or after `start`, or nil:
/// `memchr`, which scans many bytes per step, where the generic
/// `firstIndex(of:)` compares one at a time (line splitting is on the hot
/// path of every input and of every upload).
package func firstOffset(of byte: UInt8, in bytes: UnsafeRawBufferPointer, from start: Int = 0) -> Int? {
    guard start < bytes.count, let base = bytes.baseAddress, let found = memchr(base + start, Int32(byte), bytes.count - start) else {
        return nil
    }
    return base.distance(to: UnsafeRawPointer(found))
}
