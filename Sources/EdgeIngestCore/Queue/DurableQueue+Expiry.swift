extension DurableQueue {
    /// How often queued records are checked against their types' maximum
    /// age (at most; only when a lease is taken).
    static let expiryIntervalMilliseconds: Int64 = 1_000

    /// Deletes the records older than their type's maximum age
    /// (``TypeDelivery/maxAgeMilliseconds``, aged by ``QueueAge``), counted
    /// as dropped (``DropReason/expired``) in the same transaction. At most
    /// once per ``expiryIntervalMilliseconds``; nothing under a lease.
    /// - Returns: the producers waiting for space, to resume once the lock is released.
    /// Sinks over their lag bound are dropped behind here too
    /// (``dropLaggingSinks(_:_:)``).
    func expireIfDue(_ store: QueueStore, _ state: inout State) throws -> [CheckedContinuation<Void, Never>] {
        let aged = configuration.typeDelivery.compactMapValues(\.maxAgeMilliseconds)
        let lagBound = configuration.routing.sinks.contains { $0.maxLagBytes != nil || $0.maxLagMilliseconds != nil }
        guard !aged.isEmpty || lagBound && !state.sinks.isSingle else { return [] }
        let monotonic = monotonicMilliseconds()
        if let last = state.expiredAt, monotonic - last < Self.expiryIntervalMilliseconds { return [] }
        state.expiredAt = monotonic
        let lagged = try dropLaggingSinks(store, &state)
        guard !aged.isEmpty else { return lagged ? spaceFreed(&state) : [] }
        let offsets = try store.bootOffsets()
        let now = QueueAge.Now.current()
        let leased = state.leasedSegments
        var expired: [(id: Int64, type: String, records: Int64, bytes: Int64)] = []
        for segment in try store.segmentAges(types: aged.keys.sorted()) where !leased.contains(segment.id) {
            guard let maxAge = aged[segment.type],
                let age = QueueAge.of(
                    enqueuedAt: segment.enqueuedAt,
                    acceptance: segment.acceptance,
                    offsets: offsets,
                    now: now
                ), age > maxAge
            else { continue }
            expired.append((segment.id, segment.type, segment.records, segment.bytes))
        }
        guard !expired.isEmpty else { return lagged ? spaceFreed(&state) : [] }
        let records = expired.reduce(Int64(0)) { $0 + $1.records }
        let bytes = expired.reduce(Int64(0)) { $0 + $1.bytes }
        var sinks = SinkChange()
        try store.db.transaction {
            for segment in expired {
                try sinks.lose(segment: segment.id, reason: DropReason.expired.name, store)
                try store.delete(segment: segment.id)
            }
            try sinks.write(store)
            try store.add(counter: "dropped." + DropReason.expired.name, records)
        }
        sinks.apply(&state)
        state.counters["dropped." + DropReason.expired.name, default: 0] += records
        state.queuedRecords -= records
        state.queuedBytes -= bytes
        state.oldestEnqueuedAt = try store.oldestEnqueuedAt()
        var byType: [String: Int64] = [:]
        for segment in expired { byType[segment.type, default: 0] += segment.records }
        logger.notice(
            "Queued readings older than their type's maximum age were dropped (counted as expired)",
            metadata: [
                "queue.expired": "\(records)",
                "queue.expired_by_type":
                    "\(byType.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))",
            ]
        )
        return spaceFreed(&state)
    }
}
