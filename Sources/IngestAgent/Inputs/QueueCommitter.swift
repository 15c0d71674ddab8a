import Dispatch
import EdgeIngest
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
    private let idle = DispatchSemaphore(value: 1)
    private let failure = Mutex<(any Error)?>(nil)

    init(queue: DurableQueue, counters: InputCounters, committed: StopSignal? = nil) {
        self.queue = queue
        self.counters = counters
        self.committed = committed
    }

    /// Starts committing a batch once the previous one is durable.
    func submit(_ records: [Record], _ positions: [SourcePosition], _ appCounters: [String: Int64]) throws {
        try waitForInFlight()
        counters.update { $0.waitingForSpace = true }
        Task { [self] in
            do {
                try await queue.append(records, positions: positions, counters: appCounters)
                if !records.isEmpty { committed?.stop() }
            } catch {
                failure.withLock { $0 = error }
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
