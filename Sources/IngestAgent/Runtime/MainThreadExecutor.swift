// Built only where Swift 6.3's executor SPI is (AgentExecutors.swift says why).
#if compiler(>=6.3) && !PLATFORM_EXECUTORS
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency

#if canImport(Glibc)
import Glibc
#endif

/// The main actor's executor in ingestd (``AgentExecutors``): the process's
/// main thread, serving its own queue in ``run()`` and sleeping when it is
/// empty.
// Unchecked: its state is the `JobLoop` (its own lock) and a constant thread id.
package final class MainThreadExecutor: MainExecutor, SchedulingExecutor, @unchecked Sendable {
    private let loop = JobLoop<UnownedJob>()
    /// The thread that created the executor: the main thread, because
    /// ``AgentExecutors/run(_:)`` runs first thing in `main`.
    private let mainThread = pthread_self()

    package init() {}

    /// Serves main-actor jobs on the calling (main) thread until ``stop()``.
    /// (`runUntil(_:)` is the runtime's default; nothing calls it here.)
    package func run() throws {
        let executor = asUnownedSerialExecutor()
        loop.serve { job in
            unsafe ExecutorJob(job).runSynchronously(on: executor)
        }
    }

    package func stop() {
        loop.stop()
    }

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

    package var isMainExecutor: Bool { true }

    package func checkIsolated() {
        precondition(onMainThread, "Expected to be on the main actor (the main thread)")
    }

    package func isIsolatingCurrentContext() -> Bool? {
        onMainThread
    }

    private var onMainThread: Bool { pthread_equal(pthread_self(), mainThread) != 0 }
}
#endif
