/// A value behind a ``PlainLock`` (a plain pthread mutex), for locks held through slow work.
///
/// `Synchronization.Mutex` is a priority-inheritance futex on Linux: a
/// thread that finds it taken spins in the kernel (`rt_mutex`) for as long
/// as the holder runs on a CPU. The queue's lock is held through a commit —
/// compressing a segment, SQLite, the fsync — and the uploader, waiting for
/// it, spun: 8 % of the realistic end-to-end CPU on the real disk (issue 22,
/// perf). A default pthread mutex sleeps instead.
///
/// ```swift
/// let counter = PlainMutex(0)
/// counter.withLock { $0 += 1 }
/// ```
// Unchecked: `value` is reached only through withLock, under the lock.
package final class PlainMutex<Value: ~Copyable>: @unchecked Sendable {
    // Internal, not private: read by the inlinable withLock (a lock taken
    // per reading must not cost a generic call; Synchronization.Mutex's is inlined too).
    @usableFromInline let lock = PlainLock()
    @usableFromInline var value: Value

    package init(_ value: consuming Value) {
        self.value = value
    }

    /// Runs `body` with the value, the lock held.
    @inlinable package func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
