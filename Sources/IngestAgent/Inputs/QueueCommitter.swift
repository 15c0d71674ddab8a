import Dispatch
import EdgeIngest
import Logging
import Synchronization

/// Lets an input's own thread commit batches to the queue while it goes on
/// parsing the next one: at most one batch is in flight, batches commit in
/// order, and a failure is thrown by the next call. Waiting for the
/// previous batch is also how backpressure (``OverflowPolicy/block``)
/// reaches the reading thread.
final class QueueCommitter: Sendable {
    let queue: DurableQueue
    let counters: InputCounters
    let committed: StopSignal?
    let logger: Logger?
    /// Set when the input stops: a commit failing for lack of disk space then gives up.
    private let stopping = Mutex(false)
    private let idle = DispatchSemaphore(value: 1)
    private let failure = Mutex<(any Error)?>(nil)

    init(queue: DurableQueue, counters: InputCounters, committed: StopSignal? = nil, logger: Logger? = nil) {
        self.queue = queue
        self.counters = counters
        self.committed = committed
        self.logger = logger
    }

    /// The input is stopping: stop retrying a commit that lacks disk space.
    func stop() { stopping.withLock { $0 = true } }

    /// Starts committing a batch once the previous one is durable.
    func submit(_ records: [Record], _ positions: [SourcePosition], _ appCounters: [String: Int64]) throws {
        try waitForInFlight()
        counters.update { $0.waitingForSpace = true }
        Task { [self] in
            var attempt = 0
            while true {
                do {
                    try await queue.append(records, positions: positions, counters: appCounters)
                    if !records.isEmpty { committed?.stop() }
                    if attempt > 0 {
                        counters.update { $0.problem = nil }
                        logger?.notice("The queue's disk has space again; committing resumed", metadata: ["ingest.input": "\(counters.snapshot.name)"])
                    }
                } catch let error as EdgeIngestError where error.code == .diskFull && !stopping.withLock({ $0 }) {
                    // Keep the batch and try again: the input waits behind it
                    // (bounded memory), nothing read is lost, and the agent recovers
                    // by itself when space returns.
                    if attempt == 0 {
                        counters.update { $0.problem = "the queue's disk is full: \(records.count) readings wait in memory and the input is paused" }
                        logger?.error("The queue's disk is full; retrying the commit until space returns", metadata: ["ingest.input": "\(counters.snapshot.name)", "error": "\(error.message)"])
                    }
                    attempt += 1
                    try? await Task.sleep(for: .milliseconds(min(5_000, 100 << min(attempt, 6))))
                    continue
                } catch let error as EdgeIngestError where error.code == .diskFull {
                    // Stopping while the disk is still full: say exactly what is lost.
                    let name = counters.snapshot.name
                    failure.withLock {
                        $0 = AgentError(
                            "\(records.count) readings read by input '\(name)' could not be committed before the agent stopped, because the queue's disk is full; they are lost (file inputs read them again on the next start)."
                        )
                    }
                } catch {
                    failure.withLock { $0 = error }
                }
                break
            }
            counters.update { $0.waitingForSpace = false }
            idle.signal()
        }
    }

    /// Returns once every submitted batch is durable; throws if one failed.
    func drain() throws {
        try waitForInFlight()
        idle.signal()
    }

    private func waitForInFlight() throws {
        idle.wait()
        if let error = failure.withLock({ $0 }) {
            idle.signal()
            throw error
        }
    }
}
