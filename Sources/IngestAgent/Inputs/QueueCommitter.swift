import Dispatch
import EdgeIngestCore
import Logging

/// Lets an input's own thread commit batches to the queue while it goes on
/// parsing the next one: at most one batch is in flight, batches commit in
/// order, and a failure is thrown by the next call. Waiting for the
/// previous batch is also how backpressure (``OverflowPolicy/block``)
/// reaches the reading thread.
final class QueueCommitter: Sendable {
    let queue: DurableQueue
    let counters: InputCounters
    let committed: WakeSignal?
    let logger: Logger?
    /// Set for inputs whose source sends again what it is not sure we
    /// stored (MQTT): records whose `_id` was received within the window
    /// are left out durably and counted as duplicates (``DurableQueue/appendReceived(_:positions:counters:receipt:onWaitForSpace:)``).
    let receipt: Receipt?
    /// Set when the input's stop signal fires, with the batch in flight:
    /// a commit failing for lack of disk space then gives up, and one
    /// waiting for queue space (overflow policy `block`) is cancelled, so a
    /// stopping input never waits for space that may not come.
    private let control = PlainMutex<(stopping: Bool, inFlight: Task<Void, Never>?)>((false, nil))
    private let idle = DispatchSemaphore(value: 1)
    private let failure = PlainMutex<(any Error)?>(nil)
    /// Whether the input is paused by a full queue (overflow policy
    /// `block`), and when that was last logged: said when it starts and when
    /// an append finds room again, never per batch while the queue stays at
    /// its bound, and at most once a minute when a queue hovering at its
    /// bound pauses and resumes with every upload.
    private let pausedForSpace = PlainMutex((paused: false, logged: false, lastLogged: ContinuousClock.Instant?.none))

    init(
        queue: DurableQueue,
        counters: InputCounters,
        stop: StopSignal,
        committed: WakeSignal? = nil,
        logger: Logger? = nil,
        receipt: Receipt? = nil
    ) {
        self.queue = queue
        self.receipt = receipt
        self.counters = counters
        self.committed = committed
        self.logger = logger
        stop.onStop { [weak self] in
            let task = self?.control.withLock { control in
                control.stopping = true
                return control.inFlight
            }
            task?.cancel()
        }
    }

    private var stopping: Bool { control.withLock { $0.stopping } }

    /// Starts committing a batch once the previous one is durable.
    func submit(_ batch: EncodedBatch, _ positions: [SourcePosition], _ appCounters: [String: Int64]) throws {
        try waitForInFlight()
        counters.update { $0.waitingForSpace = true }
        let task = Task { [self] in
            var attempt = 0
            while true {
                do {
                    let waited = PlainMutex(false)
                    let onWait: @Sendable () -> Void = { [self] in
                        waited.withLock { $0 = true }
                        queueFull()
                    }
                    if let receipt {
                        let result = try await queue.appendReceived(
                            batch,
                            positions: positions,
                            counters: appCounters,
                            receipt: receipt,
                            onWaitForSpace: onWait
                        )
                        countRepeats(result)
                    } else {
                        try await queue.append(
                            batch,
                            positions: positions,
                            counters: appCounters,
                            onWaitForSpace: onWait
                        )
                    }
                    if !waited.withLock({ $0 }) { queueHasRoom() }
                    if !batch.isEmpty { committed?.wake() }
                    if attempt > 0 {
                        counters.update { $0.problem = nil }
                        logger?.notice(
                            "The queue's disk has space again; committing resumed",
                            metadata: ["ingest.input": "\(counters.snapshot.name)"]
                        )
                    }
                } catch let error as EdgeIngestError where error.code == .diskFull && !stopping {
                    // Keep the batch and try again: the input waits behind it
                    // (bounded memory), nothing read is lost, and the agent recovers
                    // by itself when space returns.
                    if attempt == 0 {
                        counters.update {
                            $0.problem =
                                "the queue's disk is full: \(batch.count) readings wait in memory and the input is paused"
                        }
                        logger?.error(
                            "The queue's disk is full; retrying the commit until space returns",
                            metadata: ["ingest.input": "\(counters.snapshot.name)", "error": "\(error.message)"]
                        )
                    }
                    attempt += 1
                    try? await Task.sleep(for: .milliseconds(min(5_000, 100 << min(attempt, 6))))
                    continue
                } catch let error as EdgeIngestError where error.code == .diskFull {
                    forgetIDs(of: batch)
                    failure.withLock { $0 = lostAtStop(batch.count, because: "the queue's disk is full") }
                } catch is CancellationError {
                    forgetIDs(of: batch)
                    failure.withLock {
                        $0 = lostAtStop(
                            batch.count,
                            because: "the queue is full (overflow_policy \"block\") and nothing freed space"
                        )
                    }
                } catch {
                    forgetIDs(of: batch)
                    failure.withLock { $0 = error }
                }
                break
            }
            counters.update { $0.waitingForSpace = false }
            idle.signal()
        }
        let stopNow = control.withLock { control in
            control.inFlight = task
            return control.stopping
        }
        if stopNow { task.cancel() }
    }

    /// Readings received again: re-sent ones are duplicates (not stored,
    /// not refused); ones whose `_id` came before with other content are
    /// refused as `duplicate_id` (counted; the queue keeps that count too).
    private func countRepeats(_ result: AppendResult) {
        guard result.duplicates > 0 || !result.conflicts.isEmpty else { return }
        let conflicts = Int64(result.conflicts.count)
        counters.update { s in
            s.accepted -= Int64(result.duplicates) + conflicts
            s.duplicates = (s.duplicates ?? 0) + Int64(result.duplicates)
            if conflicts > 0 {
                s.rejected += conflicts
                s.rejectedByReason["duplicate_id", default: 0] += conflicts
            }
        }
    }

    /// A batch that was never stored: its `_id`s may come again (a file
    /// input reads them again) and must not be refused as duplicates.
    private func forgetIDs(of batch: EncodedBatch) {
        queue.existingRecentIDs?.forget(batch)
    }

    private func queueFull() {
        let log = pausedForSpace.withLock { state -> Bool? in
            guard !state.paused else { return nil }
            state.paused = true
            let now = ContinuousClock.now
            state.logged = state.lastLogged.map { now - $0 >= .seconds(60) } ?? true
            if state.logged { state.lastLogged = now }
            return state.logged
        }
        guard let log else { return }
        let bound = [
            queue.configuration.maxBytes.map { "\($0) bytes" }, queue.configuration.maxRecords.map { "\($0) records" },
        ]
        .compactMap { $0 }.joined(separator: ", ")
        counters.update {
            $0.problem =
                "the queue is full (\(bound)); overflow_policy \"block\" pauses this input until uploads free space"
        }
        guard log else { return }
        logger?.warning(
            "The queue is full; this input is paused until uploads free space (overflow_policy \"block\": nothing is dropped). Raise [queue] max_bytes/max_records or check the upload if this lasts.",
            metadata: ["ingest.input": "\(counters.snapshot.name)", "ingest.queue_bound": "\(bound)"]
        )
    }

    private func queueHasRoom() {
        let log = pausedForSpace.withLock { state -> Bool? in
            guard state.paused else { return nil }
            state.paused = false
            return state.logged
        }
        guard let log else { return }
        counters.update { $0.problem = nil }
        if log {
            logger?.notice(
                "The queue has room again; this input resumed",
                metadata: ["ingest.input": "\(counters.snapshot.name)"]
            )
        }
    }

    /// Stopping while a batch cannot be committed: say exactly what is lost.
    private func lostAtStop(_ count: Int, because reason: String) -> AgentError {
        AgentError(
            .readingsLost,
            "\(count) readings read by input '\(counters.snapshot.name)' could not be committed before the agent stopped, because \(reason); they are lost (file inputs read them again on the next start, and an MQTT broker sends unacknowledged messages again)."
        )
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
