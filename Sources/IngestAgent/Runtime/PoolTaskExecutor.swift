// Built only where Swift 6.3's executor SPI is (AgentExecutors.swift says why).
#if compiler(>=6.3) && !PLATFORM_EXECUTORS
@_spi(ExperimentalScheduling) import _Concurrency
import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// Runs tasks that are not isolated to an actor on a pool of threads that
/// sleep until there is work: ingestd's default executor (``AgentExecutors``).
///
/// The pool starts with one thread per CPU (at least two). Tasks should not
/// block these threads for long — blocking reads, uploads and waits run on
/// their own threads (EdgeIngestCore's `BlockingThread`); a commit waits
/// for the disk here — and if every thread is busy, work is due and none
/// of them started an item for ``stallInterval`` nor is runnable (all
/// blocked; busy on the CPU is not stuck), the pool adds a thread, up to
/// ``maximumThreads``, as libdispatch does for its pool. Added threads
/// stay: they cost a stack and no wake-ups.
///
/// Timers (`Task.sleep`) are served by the same threads: one idle thread
/// waits for the earliest deadline.
// Unchecked: its state is the `JobLoop` (its own lock) and a `PlainMutex`; no other var.
package final class PoolTaskExecutor: TaskExecutor, SchedulingExecutor, @unchecked Sendable {
    /// How long work may wait behind threads that all are busy before
    /// another thread is added.
    package static let stallInterval: UInt64 = 100_000_000  // 100 ms
    package static let maximumThreads = 64

    private let loop = JobLoop<UnownedJob>()
    private let threadCount: PlainMutex<Int>

    /// Starts `threads` threads (default: one per online CPU, at least two)
    /// and the thread that adds more when they are all stuck.
    package init(threads: Int = max(2, sysconf(Int32(_SC_NPROCESSORS_ONLN)))) {
        threadCount = PlainMutex(0)
        for _ in 0..<max(1, threads) { addThread() }
        _ = BlockingThread.detach { [self] in watchForStalls() }
    }

    /// The number of threads serving the pool now.
    package var threads: Int { threadCount.withLock { $0 } }

    /// Whether the thread that adds threads sleeps until work waits behind
    /// busy threads (tests wait for it).
    package var stallWatcherIsAsleep: Bool { loop.stallWatcherIsAsleep }

    /// Whether the calling thread is one of the pool's.
    package var isCurrentThreadInPool: Bool { loop.servesCurrentThread }

    package func enqueue(_ job: consuming ExecutorJob) {
        loop.enqueue(UnownedJob(job))
    }

    package func enqueue<C: Clock>(
        _ job: consuming ExecutorJob,
        after delay: C.Duration,
        tolerance: C.Duration?,
        clock: C
    ) {
        loop.enqueue(UnownedJob(job), deadline: ExecutorDeadline.after(delay))
    }

    package func enqueue<C: Clock>(
        _ job: consuming ExecutorJob,
        at instant: C.Instant,
        tolerance: C.Duration?,
        clock: C
    ) {
        loop.enqueue(UnownedJob(job), deadline: ExecutorDeadline.at(instant, of: clock))
    }

    private func addThread() {
        threadCount.withLock { $0 += 1 }  // before it starts, so `threads` never lags
        let started = BlockingThread.detach { [self] in
            let executor = asUnownedTaskExecutor()
            loop.serve { job in
                unsafe ExecutorJob(job).runSynchronously(on: executor)
            }
        }
        if !started { threadCount.withLock { $0 -= 1 } }
    }

    /// Adds a thread whenever the pool is stuck, up to ``maximumThreads``;
    /// then stops watching.
    private func watchForStalls() {
        while threads < Self.maximumThreads && loop.awaitStall(checkingEvery: Self.stallInterval) {
            addThread()
        }
    }
}
#endif
