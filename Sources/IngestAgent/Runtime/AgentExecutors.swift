@_spi(ExperimentalCustomExecutors) import _Concurrency

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
/// ```swift
/// @main enum Ingestd {
///     static func main() {
///         AgentExecutors.run { await agentMain() }   // never returns
///     }
/// }
/// ```
package struct AgentExecutors: ExecutorFactory {
    package static let mainExecutor: any MainExecutor = MainThreadExecutor()
    package static let defaultExecutor: any TaskExecutor = PoolTaskExecutor()

    /// Installs these executors, runs `body` in a task on the pool and
    /// serves the main actor on the calling thread. Call it first thing in
    /// a synchronous `main`, before any task exists; `body` ends the
    /// process (`exit`), so this never returns.
    package static func run(_ body: @escaping @Sendable () async -> Never) -> Never {
        _createExecutors(factory: AgentExecutors.self)
        Task.detached { await body() }
        do {
            try MainActor.executor.run()
        } catch {
            fatalError("The main actor's executor stopped: \(error)")
        }
        fatalError("The main actor's executor stopped")
    }
}
