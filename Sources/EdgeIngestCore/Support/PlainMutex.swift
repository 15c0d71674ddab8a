#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a plain pthread mutex, for locks held through slow work.
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
// Unchecked: `value` is reached only through withLock, under the pthread mutex.
package final class PlainMutex<Value: ~Copyable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: consuming Value) {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, the lock held.
    package func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
