import Dispatch
import EdgeIngest
import Synchronization

/// Lets an input's own thread commit a batch to the queue and wait for it,
/// including while the queue applies backpressure (``OverflowPolicy/block``).
struct QueueCommitter: Sendable {
    let queue: DurableQueue
    let counters: InputCounters

    func commit(_ records: [Record], _ positions: [SourcePosition], _ appCounters: [String: Int64]) throws {
        let outcome = Mutex<Result<Void, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        counters.update { $0.waitingForSpace = true }
        Task {
            do {
                try await queue.append(records, positions: positions, counters: appCounters)
                outcome.withLock { $0 = .success(()) }
            } catch {
                outcome.withLock { $0 = .failure(error) }
            }
            done.signal()
        }
        done.wait()
        counters.update { $0.waitingForSpace = false }
        try outcome.withLock { $0! }.get()
    }
}
