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

    func appendNow(
        _ batch: EncodedBatch,
        sizes: [Int],
        positions: [SourcePosition],
        counters: [String: Int64],
        receipt: Receipt? = nil
    ) throws -> AppendAttempt {
        let limits = OverflowPlan.Limits(maxRecords: configuration.maxRecords, maxBytes: configuration.maxBytes)
        let total = sizes.reduce(Int64(0)) { $0 + Int64($1) }
        if configuration.overflowPolicy == .block, !limits.fits(records: Int64(sizes.count), bytes: total) {
            throw EdgeIngestError(
                .queueFull,
                "A batch of \(sizes.count) records (\(total) bytes) can never fit the queue \(configuration.location), bounded to \(describe(limits)). Append smaller batches or raise the bound."
            )
        }
        return try state.withLock { state -> AppendAttempt in
            let store = try state.openStore(configuration.location.description)
            let now = wallClockMilliseconds()
            var batch = batch
            var sizes = sizes
            var counters = counters
            var duplicates = 0
            var conflicts: [Int] = []
            var contents: [Int64] = []
            // Records received from another client: refused for a stale
            // session (throws StaleSession), re-sent ones and conflicting
            // ones (same `_id`, other content) left out.
            let received = try receipt.map { _ in try store.receivedIDs(now: now) }
            if let receipt, let received {
                let repeated = try received.repeated(in: batch, receipt: receipt, now: now)
                contents = repeated.contents
                if !repeated.resent.isEmpty || !repeated.conflicts.isEmpty {
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
            let leaseEnd = state.lease?.lastSegmentID ?? 0
            let plan = try OverflowPlan.make(
                policy: configuration.overflowPolicy,
                limits: limits,
                queuedRecords: state.queuedRecords,
                queuedBytes: state.queuedBytes,
                incomingBytes: sizes,
                droppable: { try store.segmentSizes(after: leaseEnd) }
            )
            if plan.mustWait { return .wait(state.spaceGeneration) }
            let incomingReason =
                configuration.overflowPolicy == .dropNewest ? DropReason.overflowDropNewest : .overflowDropOldest
            let kept = batch.slice(plan.acceptFrom, plan.acceptTo)
            let accepted = plan.acceptTo - plan.acceptFrom
            let acceptedBytes = sizes[plan.acceptFrom..<plan.acceptTo].reduce(Int64(0)) { $0 + Int64($1) }
            // One transaction: the records, the counters, the received ids and session.
            func commit() throws {
                for id in plan.dropSegments { try store.delete(segment: id) }
                try store.add(counter: "dropped." + DropReason.overflowDropOldest.name, plan.droppedStoredRecords)
                for run in kept {
                    try store.insert(run, schemaVersion: configuration.schemaVersion, enqueuedAt: now)
                }
                try store.add(counter: "dropped." + incomingReason.name, Int64(plan.droppedIncoming))
                // Readings dropped on arrival were accepted too, then dropped: one
                // definition for every policy (docs/QUEUE.md, invariant 2).
                try store.add(counter: "appended_total", Int64(accepted + plan.droppedIncoming))
                for position in positions { try store.set(position: position, at: now) }
                for (name, delta) in counters { try store.add(counter: "app." + name, delta) }
                if let receipt, let received {
                    try received.remember(
                        kept,
                        contents: contents.isEmpty ? [] : Array(contents[plan.acceptFrom..<plan.acceptTo]),
                        receipt: receipt,
                        now: now
                    )
                }
            }
            do {
                try store.db.transaction { try commit() }
                received?.didCommit()
            } catch {
                received?.didRollBack()
                throw error
            }
            for (name, delta) in counters { state.counters["app." + name, default: 0] += delta }
            state.queuedRecords += Int64(accepted) - plan.droppedStoredRecords
            state.queuedBytes += acceptedBytes - plan.droppedStoredBytes
            state.counters["appended_total", default: 0] += Int64(accepted + plan.droppedIncoming)
            if plan.droppedStoredRecords > 0 {
                state.counters["dropped." + DropReason.overflowDropOldest.name, default: 0] += plan.droppedStoredRecords
                state.oldestEnqueuedAt = try store.oldestEnqueuedAt()
            }
            if plan.droppedIncoming > 0 {
                state.counters["dropped." + incomingReason.name, default: 0] += Int64(plan.droppedIncoming)
            }
            if state.oldestEnqueuedAt == nil && accepted > 0 { state.oldestEnqueuedAt = now }
            let result = AppendResult(
                accepted: accepted,
                droppedIncoming: plan.droppedIncoming,
                droppedStored: plan.droppedStoredRecords,
                duplicates: duplicates,
                conflicts: conflicts
            )
            if plan.droppedIncoming > 0 || plan.droppedStoredRecords > 0 {
                logger.warning(
                    "Queue full: records dropped by the overflow policy",
                    metadata: [
                        "queue.policy": "\(configuration.overflowPolicy)",
                        "queue.dropped_incoming": "\(plan.droppedIncoming)",
                        "queue.dropped_stored": "\(plan.droppedStoredRecords)",
                    ]
                )
            }
            return .done(result)
        }
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
