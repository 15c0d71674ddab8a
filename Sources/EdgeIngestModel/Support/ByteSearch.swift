#if canImport(Glibc)
import Glibc
#endif

/// The offset in `bytes` of the first `byte` at or after `start`, or nil:
/// `memchr`, which scans many bytes per step, where the generic
/// `firstIndex(of:)` compares one at a time (line splitting is on the hot
/// path of every input and of every upload).
package func firstOffset(of byte: UInt8, in bytes: UnsafeRawBufferPointer, from start: Int = 0) -> Int? {
    guard start < bytes.count, let base = bytes.baseAddress,
        let found = memchr(base + start, Int32(byte), bytes.count - start)
    else {
        return nil
    }
    return base.distance(to: UnsafeRawPointer(found))
}

/// Calls `body` with the index and bytes (without the "\n") of each line of
/// `bytes` from `start` on — a last line without its newline counts — until
/// `body` returns false. Returns how many lines `body` was given.
@discardableResult
package func forEachLine(
    in bytes: UnsafeRawBufferPointer,
    from start: Int = 0,
    _ body: (Int, UnsafeRawBufferPointer) throws -> Bool
) rethrows -> Int {
    var start = start
    var index = 0
    while start < bytes.count {
        let end = firstOffset(of: UInt8(ascii: "\n"), in: bytes, from: start) ?? bytes.count
        index += 1
        guard try body(index - 1, UnsafeRawBufferPointer(rebasing: bytes[start..<end])) else { break }
        start = end + 1
    }
    return index
}
