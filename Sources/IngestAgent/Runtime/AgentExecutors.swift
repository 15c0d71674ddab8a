#if compiler(>=6.3) && !PLATFORM_EXECUTORS
@_spi(ExperimentalCustomExecutors) import _Concurrency
#else
import Dispatch
#endif

/// The executors Swift concurrency runs ingestd's tasks on: a
/// ``PoolTaskExecutor`` for tasks and a ``MainThreadExecutor`` for the main
/// actor, in place of libdispatch's.
///
/// Why: libdispatch on Linux wakes a thread every second for as long as the
/// process lives (its worker-pool monitor, swift-corelibs-libdispatch
/// `src/event/workqueue.c`), which alone breaks the footprint target of at
/// most one wake-up per second when idle. These executors sleep until a job
/// or a timer is due. `_createExecutors` is Swift 6.3's (still
/// experimental, SPI) hook for this; the library and its tests keep the
/// platform's executors.
///
/// The SPI may be renamed by any toolchain release, so the executors are
/// built only with Swift 6.3 or later and not when the package is built
/// with `INGESTD_EXECUTORS=platform` (Package.swift defines
/// `PLATFORM_EXECUTORS`); then ``run(_:)`` runs `body` on the platform's
/// executors. CI builds and tests both (scripts/test-platform-executors.sh).
///
/// ```swift
/// @main enum Ingestd {
///     static func main() {
///         AgentExecutors.run { await agentMain() }   // never returns
///     }
/// }
/// ```
package enum AgentExecutors {
    /// Installs ingestd's executors (when built), runs `body` in a task on
    /// the pool and serves the main actor on the calling thread. Call it
    /// first thing in a synchronous `main`, before any task exists; `body`
    /// ends the process (`exit`), so this never returns.
    package static func run(_ body: @escaping @Sendable () async -> Never) -> Never {
        #if compiler(>=6.3) && !PLATFORM_EXECUTORS
        _createExecutors(factory: AgentExecutorFactory.self)
        Task.detached { await body() }
        do {
            try MainActor.executor.run()
        } catch {
            fatalError("The main actor's executor stopped: \(error)")
        }
        fatalError("The main actor's executor stopped")
        #else
        Task.detached { await body() }
        dispatchMain()
        #endif
    }
}

#if compiler(>=6.3) && !PLATFORM_EXECUTORS
/// What `_createExecutors` installs: the pool for tasks, the main thread's
/// loop for the main actor.
struct AgentExecutorFactory: ExecutorFactory {
    static let mainExecutor: any MainExecutor = MainThreadExecutor()
    static let defaultExecutor: any TaskExecutor = PoolTaskExecutor()
}
#endif
