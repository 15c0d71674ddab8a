#if canImport(Glibc)
import Glibc
#endif

extension DurableQueue {
    /// Appends records in one transaction: once this returns, all accepted
    /// records (and `positions`) are durable together; after a crash before
    /// it returns, none of them are.
    ///
    /// When the queue is at its bound the ``OverflowPolicy`` decides:
    /// ``OverflowPolicy/block`` suspends until the uploader frees space,
    /// the drop policies store what they keep and count the rest.
    ///
    /// - Parameters:
    ///   - records: validated records of the queue's object types, in order.
    ///   - positions: input positions to commit with these records.
    ///   - counters: application counters to add in the same transaction
    ///     (e.g. `rejected.malformed_json`), so that what an input read is
    ///     accounted exactly once even across crashes. Read them back with
    ///     ``QueueStatistics/counters``.
    /// - Returns: how many records were stored and dropped.
    /// - Throws: ``EdgeIngestError`` (``EdgeIngestError/Code/unknownObjectType``,
    ///   ``EdgeIngestError/Code/queueFull`` when a batch can never fit under
    ///   ``OverflowPolicy/block``, ``EdgeIngestError/Code/storage`` on disk
    ///   errors), or `CancellationError` if the task is cancelled while
    ///   waiting for space (nothing is stored then).
    ///   - onWaitForSpace: called once, before the append first waits for
    ///     space (a full queue under ``OverflowPolicy/block``), so a caller
    ///     can say that its producer is paused.
    @discardableResult
    public func append(
        _ records: [Record],
        positions: [SourcePosition] = [],
        counters: [String: Int64] = [:],
        onWaitForSpace: (@Sendable () -> Void)? = nil
    ) async throws -> AppendResult {
        let batch = try EncodedBatch(
            records: records,
            types: typesByName,
            queueName: configuration.location.description
        )
        return try await appendChecked(batch, positions: positions, counters: counters, onWaitForSpace: onWaitForSpace)
    }

    /// Appends records already encoded (by ``RecordBuilder/finish(into:)``),
    /// with the same guarantees as ``append(_:positions:counters:onWaitForSpace:)-([Record],_,_,_)``.
    @discardableResult
    public func append(
        _ batch: EncodedBatch,
        positions: [SourcePosition] = [],
        counters: [String: Int64] = [:],
        onWaitForSpace: (@Sendable () -> Void)? = nil
    ) async throws -> AppendResult {
        try batch.check(against: typesByName, queueName: configuration.location.description)
        return try await appendChecked(batch, positions: positions, counters: counters, onWaitForSpace: onWaitForSpace)
    }

    /// Appends records received from another party that may send them
    /// again (an MQTT broker redelivering unacknowledged messages): as
    /// ``append(_:positions:counters:onWaitForSpace:)-(EncodedBatch,_,_,_)``,
    /// but records whose `_id` was received within the receipt's window are
    /// left out, durably (``AppendResult/duplicates``, ``AppendResult/conflicts``),
    /// as for ``receive(_:receipt:counters:)``.
    package func appendReceived(
        _ batch: EncodedBatch,
        positions: [SourcePosition] = [],
        counters: [String: Int64] = [:],
        receipt: Receipt,
        onWaitForSpace: (@Sendable () -> Void)? = nil
    ) async throws -> AppendResult {
        try batch.check(against: typesByName, queueName: configuration.location.description)
        return try await appendChecked(
            batch,
            positions: positions,
            counters: counters,
            receipt: receipt,
            onWaitForSpace: onWaitForSpace
        )
    }

    private func appendChecked(
        _ batch: EncodedBatch,
        positions: [SourcePosition],
        counters: [String: Int64],
        receipt: Receipt? = nil,
        onWaitForSpace: (@Sendable () -> Void)?
    ) async throws -> AppendResult {
        let sizes = batch.recordSizes
        var waited = false
        while true {
            switch try appendNow(batch, sizes: sizes, positions: positions, counters: counters, receipt: receipt) {
            case .done(let result): return result
            case .wait(let generation):
                if !waited {
                    waited = true
                    onWaitForSpace?()
                }
                try await waitForSpace(since: generation)
            }
        }
    }

    enum AppendAttempt {
        case done(AppendResult)
        case wait(UInt64)
    }

    /// One batch to append: what ``appendNow(_:)`` takes.
    struct AppendRequest {
        var batch: EncodedBatch
        var sizes: [Int]
        var positions: [SourcePosition]
        var counters: [String: Int64]
        var receipt: Receipt?
    }

    func appendNow(
        _ batch: EncodedBatch,
        sizes: [Int],
        positions: [SourcePosition],
        counters: [String: Int64],
        receipt: Receipt? = nil
    ) throws -> AppendAttempt {
        let request = AppendRequest(
            batch: batch,
            sizes: sizes,
            positions: positions,
            counters: counters,
            receipt: receipt
        )
        return try appendNow([request])[0].get()
    }

    /// What staging one request wrote in the open transaction, applied to
    /// the queue's state once it commits.
    private struct Staged {
        var index: Int
        var result: AppendResult
        var counters: [String: Int64]
        var acceptedBytes: Int64
        var droppedStoredBytes: Int64
        var incomingReason: DropReason
        /// With several sinks: their counters and backlogs.
        var sinks: SinkChange
    }

    /// Appends `requests` in **one** transaction (a group commit: one
    /// commit and one fsync for all), each as
    /// ``append(_:positions:counters:onWaitForSpace:)-([Record],_,_,_)``
    /// appends one: in order, each seeing what the ones before it stored
    /// (their ids, the space they took). One result per request: those that
    /// must wait for space, come from a stale session or can never fit
    /// store nothing and the others go on; when the transaction itself
    /// fails, nothing of it is stored and each request is tried again
    /// alone, so one request's error is only its own.
    func appendNow(_ requests: [AppendRequest]) -> [Result<AppendAttempt, any Error>] {
        let limits = OverflowPlan.Limits(maxRecords: configuration.maxRecords, maxBytes: configuration.maxBytes)
        // Batches that can never fit are refused without touching the file.
        let refused: [Result<AppendAttempt, any Error>?] = requests.map { request in
            let total = request.sizes.reduce(Int64(0)) { $0 + Int64($1) }
            guard configuration.overflowPolicy == .block,
                !limits.fits(records: Int64(request.sizes.count), bytes: total)
            else { return nil }
            return .failure(
                EdgeIngestError(
                    .queueFull,
                    "A batch of \(request.sizes.count) records (\(total) bytes) can never fit the queue \(configuration.location), bounded to \(describe(limits)). Append smaller batches or raise the bound."
                )
            )
        }
        if !refused.contains(where: { $0 == nil }) { return refused.map { $0! } }
        var results = refused
        do {
            try state.withLock { state in
                let store = try state.openStore(configuration.location.description)
                let now = wallClockMilliseconds()
                // Before the transaction: a rollback must not take it.
                try store.recordClockOffsetIfSynchronised(now: now)
                let received = try requests.contains { $0.receipt != nil } ? store.receivedIDs(now: now) : nil
                var queued = (records: state.queuedRecords, bytes: state.queuedBytes)
                let leased = state.leasedSegments
                var staged: [Staged] = []
                // The transaction begins at the first write: a batch that only
                // waits for space, or comes from a stale session, writes nothing.
                var begun = false
                let begin = {
                    guard !begun else { return }
                    try store.db.execute("BEGIN IMMEDIATE")
                    begun = true
                }
                do {
                    for i in requests.indices where results[i] == nil {
                        do {
                            if let done = try stage(
                                requests[i],
                                index: i,
                                store: store,
                                received: received,
                                now: now,
                                limits: limits,
                                leased: leased,
                                queued: &queued,
                                begin: begin
                            ) {
                                staged.append(done)
                            } else {
                                results[i] = .success(.wait(state.spaceGeneration))
                            }
                        } catch let stale as StaleSession {
                            results[i] = .failure(stale)  // refused before it wrote anything
                        }
                    }
                    if begun { try store.db.execute("COMMIT") }
                    received?.didCommit()
                } catch {
                    if begun { try? store.db.execute("ROLLBACK") }
                    received?.didRollBack()
                    throw error
                }
                var droppedStored = false
                for done in staged {
                    let (accepted, droppedIncoming, droppedStoredRecords) =
                        (done.result.accepted, done.result.droppedIncoming, done.result.droppedStored)
                    for (name, delta) in done.counters { state.counters["app." + name, default: 0] += delta }
                    done.sinks.apply(&state)
                    state.queuedRecords += Int64(accepted) - droppedStoredRecords
                    state.queuedBytes += done.acceptedBytes - done.droppedStoredBytes
                    state.counters["appended_total", default: 0] += Int64(accepted + droppedIncoming)
                    if droppedStoredRecords > 0 {
                        state.counters["dropped." + DropReason.overflowDropOldest.name, default: 0] +=
                            droppedStoredRecords
                        droppedStored = true
                    }
                    if droppedIncoming > 0 {
                        state.counters["dropped." + done.incomingReason.name, default: 0] += Int64(droppedIncoming)
                    }
                    if state.oldestEnqueuedAt == nil && accepted > 0 { state.oldestEnqueuedAt = now }
                    if droppedIncoming > 0 || droppedStoredRecords > 0 {
                        logger.warning(
                            "Queue full: records dropped by the overflow policy",
                            metadata: [
                                "queue.policy": "\(configuration.overflowPolicy)",
                                "queue.dropped_incoming": "\(droppedIncoming)",
                                "queue.dropped_stored": "\(droppedStoredRecords)",
                            ]
                        )
                    }
                    results[done.index] = .success(.done(done.result))
                }
                // Committed: an error from here on must not make the group be
                // tried again (it would be stored twice). The age is only shown.
                if droppedStored { state.oldestEnqueuedAt = (try? store.oldestEnqueuedAt()) ?? state.oldestEnqueuedAt }
            }
        } catch {
            // Nothing of the group was stored: alone, each request's error is
            // its own (waits and stale sessions too: decided on rolled-back state).
            guard requests.count > 1 else { return [.failure(error)] }
            return requests.indices.map { i in refused[i] ?? appendNow([requests[i]])[0] }
        }
        return results.map { $0! }
    }

    /// Writes one request in the group's transaction (`begin` opens it
    /// before the first write): its records (less those received before,
    /// and what the overflow policy drops), its counters, its received ids.
    /// nil: it must wait for space (nothing written).
    /// `queued`: the queue's size with the group's earlier requests, moved
    /// past this one's.
    private func stage(
        _ request: AppendRequest,
        index: Int,
        store: QueueStore,
        received: ReceivedIDs?,
        now: Int64,
        limits: OverflowPlan.Limits,
        leased: Set<Int64>,
        queued: inout (records: Int64, bytes: Int64),
        begin: () throws -> Void
    ) throws -> Staged? {
        var batch = request.batch
        var sizes = request.sizes
        var counters = request.counters
        var duplicates = 0
        var conflicts: [Int] = []
        var contents: [Int64] = []
        var sorted: (list: ReceivedIDList, hashes: [ReceivedIDFilter.Hashes])?
        // Records received from another client: refused for a stale
        // session (throws StaleSession), re-sent ones and conflicting
        // ones (same `_id`, other content) left out.
        if let receipt = request.receipt, let received {
            let repeated = try received.repeated(in: batch, receipt: receipt, now: now)
            contents = repeated.contents
            sorted = (repeated.sorted, repeated.hashes)
            if !repeated.resent.isEmpty || !repeated.conflicts.isEmpty {
                sorted = nil  // indices change
                duplicates = repeated.resent.count
                conflicts = repeated.conflicts
                let removed = (repeated.resent + repeated.conflicts).sorted()
                batch = batch.removing(removed)
                let left = Set(removed)
                contents = contents.enumerated().filter { !left.contains($0.offset) }.map(\.element)
                sizes = batch.recordSizes
                // Persistent, with the records: how often clients re-sent what
                // was stored, and how often one `_id` came with other content
                // (a rejection of the input too: `rejected.duplicate_id`).
                if duplicates > 0 { counters["received.duplicates", default: 0] += Int64(duplicates) }
                if !conflicts.isEmpty {
                    counters["received.conflicts", default: 0] += Int64(conflicts.count)
                    counters["rejected.duplicate_id", default: 0] += Int64(conflicts.count)
                }
            }
        }
        let plan = try OverflowPlan.make(
            policy: configuration.overflowPolicy,
            limits: limits,
            queuedRecords: queued.records,
            queuedBytes: queued.bytes,
            incomingBytes: sizes,
            droppable: {
                OverflowPlan.dropOrder(
                    try store.segmentSizes(after: 0).filter { !leased.contains($0.id) },
                    reserved: configuration.reservedBytes
                )
            }
        )
        if plan.mustWait { return nil }
        try begin()
        let incomingReason =
            configuration.overflowPolicy == .dropNewest ? DropReason.overflowDropNewest : .overflowDropOldest
        let kept = batch.slice(plan.acceptFrom, plan.acceptTo)
        let accepted = plan.acceptTo - plan.acceptFrom
        let acceptedBytes = sizes[plan.acceptFrom..<plan.acceptTo].reduce(Int64(0)) { $0 + Int64($1) }
        // In the group's transaction: the records, the counters, the received ids and session.
        var sinks = SinkChange()
        for id in plan.dropSegments {
            try sinks.lose(segment: id, reason: DropReason.overflowDropOldest.name, store)
            try store.delete(segment: id)
        }
        try store.add(counter: "dropped." + DropReason.overflowDropOldest.name, plan.droppedStoredRecords)
        for run in kept {
            try store.insert(run, schemaVersion: configuration.schemaVersion, enqueuedAt: now)
            sinks.route(run, store)
        }
        try sinks.write(store)
        try store.add(counter: "dropped." + incomingReason.name, Int64(plan.droppedIncoming))
        // Readings dropped on arrival were accepted too, then dropped: one
        // definition for every policy (docs/QUEUE.md, invariant 2).
        try store.add(counter: "appended_total", Int64(accepted + plan.droppedIncoming))
        for position in request.positions { try store.set(position: position, at: now) }
        for (name, delta) in counters { try store.add(counter: "app." + name, delta) }
        if let receipt = request.receipt, let received {
            try received.remember(
                kept,
                contents: contents.isEmpty ? [] : Array(contents[plan.acceptFrom..<plan.acceptTo]),
                receipt: receipt,
                now: now,
                sorted: plan.acceptFrom == 0 && plan.acceptTo == batch.count ? sorted : nil
            )
        }
        queued.records += Int64(accepted) - plan.droppedStoredRecords
        queued.bytes += acceptedBytes - plan.droppedStoredBytes
        return Staged(
            index: index,
            result: AppendResult(
                accepted: accepted,
                droppedIncoming: plan.droppedIncoming,
                droppedStored: plan.droppedStoredRecords,
                duplicates: duplicates,
                conflicts: conflicts
            ),
            counters: counters,
            acceptedBytes: acceptedBytes,
            droppedStoredBytes: plan.droppedStoredBytes,
            incomingReason: incomingReason,
            sinks: sinks
        )
    }

    /// Suspends until space is freed after `generation`, the queue closes,
    /// or the task is cancelled.
    func waitForSpace(since generation: UInt64) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.spaceGeneration != generation || state.store == nil || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
        try Task.checkCancellation()
    }

    /// Wakes every producer waiting for space; call after freeing some.
    func spaceFreed(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        state.spaceGeneration &+= 1
        let waiting = Array(state.waiters.values)
        state.waiters = [:]
        return waiting
    }

    private func describe(_ limits: OverflowPlan.Limits) -> String {
        [limits.maxRecords.map { "max_records \($0)" }, limits.maxBytes.map { "max_bytes \($0)" }]
            .compactMap { $0 }.joined(separator: " and ")
    }
}

extension DurableQueue {
    /// ``append(_:positions:counters:)`` for callers that cannot suspend
    /// (``IngestRealm/write(_:)``): when the queue is full under
    /// ``OverflowPolicy/block``, the calling thread waits for space.
    @discardableResult
    package func appendBlocking(_ records: [Record]) throws -> AppendResult {
        let batch = try EncodedBatch(
            records: records,
            types: typesByName,
            queueName: configuration.location.description
        )
        let sizes = batch.recordSizes
        while true {
            switch try appendNow(batch, sizes: sizes, positions: [], counters: [:]) {
            case .done(let result): return result
            case .wait: usleep(10_000)
            }
        }
    }
}
