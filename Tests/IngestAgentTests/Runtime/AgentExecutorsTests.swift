#if compiler(>=6.3) && !PLATFORM_EXECUTORS
import EdgeIngestCore
@testable import IngestAgent
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// ingestd's executors, run as task executors and as an actor's executor
/// inside the test process (which itself keeps the platform's). ingestd
/// installs them globally; every test that runs the binary uses them.
@Suite struct AgentExecutorsTests {
    @Test func tasksRunOnThePoolAndSleepThere() async throws {
        let pool = PoolTaskExecutor(threads: 2)
        #expect(!pool.isCurrentThreadInPool)
        let results = await withTaskGroup(of: (value: Int, onPool: Bool).self) { group in
            for value in 0..<500 {
                group.addTask(executorPreference: pool) {
                    let before = pool.isCurrentThreadInPool
                    try? await Task.sleep(for: .milliseconds(value % 5))
                    return (value, before && pool.isCurrentThreadInPool)
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.map(\.value).sorted() == Array(0..<500))
        #expect(results.allSatisfy { $0.onPool })
        #expect(pool.threads == 2)
    }

    /// A task that blocks its thread until a task it started on the same
    /// pool has run: with a fixed pool of one thread that deadlocks; the pool
    /// adds a thread instead.
    @Test func aPoolWhoseThreadsAreAllStuckGrows() async {
        let pool = PoolTaskExecutor(threads: 1)
        #expect(await eventually { pool.stallWatcherIsAsleep })
        let helperRan = Flag()
        let blocker = Task(executorPreference: pool) { @Sendable in
            let helper = Task(executorPreference: pool) { @Sendable in helperRan.set() }
            for _ in 0..<10_000 where !helperRan.isSet { usleep(1_000) }  // blocked, at most 10 s
            _ = helper
        }
        #expect(await eventually { helperRan.isSet })
        await blocker.value
        #expect(await eventually { pool.threads == 2 })
    }

    @Test func deadlinesFromTheRuntimesClocks() {
        #expect(ExecutorDeadline.nanoseconds(Duration.milliseconds(1_500)) == 1_500_000_000)
        #expect(ExecutorDeadline.nanoseconds(Duration.nanoseconds(7)) == 7)
        #expect(ExecutorDeadline.nanoseconds(Duration.seconds(-3)) == 0)
        #expect(ExecutorDeadline.nanoseconds(Duration.zero) == 0)
        #expect(ExecutorDeadline.nanoseconds(Duration.seconds(Int64.max)) == UInt64(Int64.max / 2))
        let now = JobLoop<Void>.now
        let deadline = ExecutorDeadline.at(ContinuousClock.now.advanced(by: .seconds(2)), of: ContinuousClock())
        #expect(deadline > now + 1_900_000_000 && deadline < now + 2_100_000_000 + 1_000_000_000)
    }

    @Test func anActorOnTheMainThreadExecutorRunsOnItsThread() async {
        let made = Mutex<(executor: MainThreadExecutor, thread: Int32)?>(nil)
        let server = TestThread {
            let executor = MainThreadExecutor()
            made.withLock { $0 = (executor, currentThreadID()) }
            try? executor.run()
        }
        #expect(await eventually { made.withLock { $0 != nil } })
        let (executor, thread) = made.withLock { $0! }
        let actor = ThreadReportingActor(executor: executor)
        for _ in 0..<3 {
            let report = await actor.report()
            #expect(report.thread == thread)
            #expect(report.isolated == true)
        }
        #expect(executor.isIsolatingCurrentContext() == false)
        #expect(executor.isMainExecutor)
        executor.stop()
        server.join()
    }
}

actor ThreadReportingActor {
    let executor: MainThreadExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    init(executor: MainThreadExecutor) { self.executor = executor }

    func report() -> (thread: Int32, isolated: Bool?) {
        (currentThreadID(), executor.isIsolatingCurrentContext())
    }
}

final class Flag: Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}
#endif
