#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The codebase's one mutex: a plain pthread mutex, for locks held through
/// slow work and for state that threads wait on (with ``PlainCondition``).
/// A waiter sleeps; `Synchronization.Mutex` (a priority-inheritance futex
/// on Linux) made waiters spin in the kernel for as long as the holder ran
/// (``PlainMutex``'s note). Every lock in the codebase is this type or
/// ``PlainMutex`` (a value behind one).
///
/// Use ``PlainMutex`` when the state is one value. Use this when the state
/// is spread over several properties that threads wait on: the owner keeps
/// its properties, reads and writes them only between ``lock()`` and
/// ``unlock()`` (or in ``withLock(_:)``), and waits with
/// ``wait(on:)`` / ``wait(on:untilMonotonicNanoseconds:)``.
///
/// ```swift
/// let lock = PlainLock()
/// let changed = PlainCondition()
/// lock.lock()
/// while !ready { lock.wait(on: changed) }
/// lock.unlock()
/// // elsewhere: lock.withLock { ready = true }; changed.signal()
/// ```
// Unchecked: the pthread mutex is what makes it safe to share.
package final class PlainLock: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

    package init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    @inlinable package func lock() { pthread_mutex_lock(mutex) }

    @inlinable package func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` with the lock held.
    @inlinable package func withLock<Result, E: Error>(_ body: () throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Releases the lock (which the caller holds), sleeps until `condition`
    /// is signalled (or spuriously: callers wait in a loop on their own
    /// state), and takes the lock again.
    @inlinable package func wait(on condition: PlainCondition) {
        pthread_cond_wait(condition.condition, mutex)
    }

    /// ``wait(on:)``, or until CLOCK_MONOTONIC reaches `deadline` (ns).
    @inlinable package func wait(on condition: PlainCondition, untilMonotonicNanoseconds deadline: UInt64) {
        var until = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        pthread_cond_timedwait(condition.condition, mutex, &until)
    }
}

/// A condition variable on CLOCK_MONOTONIC (a deadline is not moved by a
/// wall-clock jump), waited on with ``PlainLock/wait(on:)``. Signal it
/// after releasing the lock, so the woken thread does not block on it at once.
// Unchecked: the pthread condition variable is what makes it safe to share.
package final class PlainCondition: @unchecked Sendable {
    @usableFromInline let condition: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        condition = .allocate(capacity: 1)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    /// Wakes one waiter.
    @inlinable package func signal() { pthread_cond_signal(condition) }

    /// Wakes every waiter.
    @inlinable package func broadcast() { pthread_cond_broadcast(condition) }
}
