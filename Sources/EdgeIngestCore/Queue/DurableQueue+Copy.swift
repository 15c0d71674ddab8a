extension DurableQueue {
    /// Copies every pending record into `target` in one transaction of the
    /// target (the seeds' `writeCopy`): `_id`s, payloads, schema versions
    /// and enqueue times are kept, so a deduplicating backend stores each
    /// record once whichever queue uploads it. With `discard`, the copied
    /// records are then deleted here and counted as dropped with that
    /// reason (a client reset) — in the same critical section, so records
    /// appended meanwhile are neither copied nor discarded.
    ///
    /// A damaged segment (docs/QUEUE.md "Integrity") is not copied: it is
    /// quarantined here, and left out of the count.
    ///
    /// `progress` is called after each copied segment with the records
    /// copied so far (for a progress display; it runs under the queues'
    /// locks, so keep it short).
    ///
    /// - Returns: the number of records copied.
    /// - Throws: ``EdgeIngestError/Code/invalidConfiguration`` if `target` is
    ///   this queue, does not accept a pending record's type, or has a
    ///   lower schema version; ``EdgeIngestError/Code/leaseMisuse`` if
    ///   discarding while the uploader holds a lease.
    @discardableResult
    package func copyPending(
        into target: DurableQueue,
        discard: DropReason? = nil,
        progress: ((Int64) -> Void)? = nil
    ) throws -> Int64 {
        guard target !== self else {
            throw EdgeIngestError(
                .invalidConfiguration,
                "A queue cannot be copied into itself: give writeCopy another file or in-memory identifier."
            )
        }
        let (copied, waiters) = try state.withLock { source -> (Int64, [CheckedContinuation<Void, Never>]) in
            let store = try source.openStore(configuration.location.description)
            if discard != nil, !source.leases.isEmpty {
                throw EdgeIngestError(
                    .leaseMisuse,
                    "The queue \(configuration.location) cannot discard records while a batch is being uploaded."
                )
            }
            let (records, bytes, damaged) = try target.receiveCopy(
                from: store,
                sourceName: configuration.location.description,
                refuseDamage: configuration.readOnly,
                progress: progress
            )
            for (id, problem) in damaged { try quarantine(segment: id, problem: problem, &source) }
            guard let discard else { return (records, []) }
            try store.db.transaction {
                try store.db.execute("DELETE FROM segments; DELETE FROM sink_progress")
                try store.add(counter: "dropped." + discard.name, records)
            }
            source.counters["dropped." + discard.name, default: 0] += records
            source.queuedRecords -= records
            source.queuedBytes -= bytes
            source.oldestEnqueuedAt = nil
            for sink in source.sinkQueued.keys { source.sinkQueued[sink] = (0, 0) }
            return (records, spaceFreed(&source))
        }
        waiters.forEach { $0.resume() }
        if discard != nil {
            try? state.withLock { try $0.store?.reclaimFreePages(queueIsEmpty: $0.queuedRecords == 0) }
        }
        return copied
    }

    /// The target side of ``copyPending(into:discard:)``.
    /// Damaged source segments are skipped and returned (or refused, with
    /// `refuseDamage`, when the source cannot quarantine them).
    private func receiveCopy(
        from source: QueueStore,
        sourceName: String,
        refuseDamage: Bool,
        progress: ((Int64) -> Void)?
    ) throws -> (records: Int64, bytes: Int64, damaged: [(Int64, String)]) {
        // The source store is used under the source queue's lock, which the caller holds.
        try state.withLock { target in
            let store = try target.openStore(configuration.location.description)
            var records: Int64 = 0
            var bytes: Int64 = 0
            var oldest: Int64?
            var damaged: [(Int64, String)] = []
            try store.db.transaction {
                try store.copyBoots(from: source)
                try source.scanSegments { row in
                    if let problem = row.damage {
                        guard !refuseDamage else {
                            throw EdgeIngestError(
                                .queueCorrupt,
                                "Segment \(row.id) of the queue \(sourceName) is damaged (\(problem)); nothing was copied. Run `ingestd repair` on it first."
                            )
                        }
                        damaged.append((row.id, problem))
                        return true
                    }
                    guard typesByName[row.type] != nil else {
                        throw EdgeIngestError(
                            .invalidConfiguration,
                            "The queue \(sourceName) holds '\(row.type)' records, which \(configuration.location) does not accept: add the type to its object types."
                        )
                    }
                    guard row.schemaVersion <= configuration.schemaVersion else {
                        throw EdgeIngestError(
                            .invalidConfiguration,
                            "The queue \(sourceName) holds records of schema version \(row.schemaVersion), newer than \(configuration.location)'s \(configuration.schemaVersion)."
                        )
                    }
                    let pending = row.recordCount - row.consumed
                    let ids = UnsafeRawBufferPointer(rebasing: row.ids[(Int(row.consumed) * 12)..<row.ids.count])
                    let payload = UnsafeRawBufferPointer(
                        rebasing: row.payload[Int(row.consumedBytes)..<row.payload.count]
                    )
                    try store.insertCopy(of: row, ids: ids, payload: payload, records: pending)
                    records += pending
                    bytes += Int64(payload.count)
                    oldest = min(oldest ?? row.enqueuedAt, row.enqueuedAt)
                    progress?(records)
                    return true
                }
                try store.add(counter: "appended_total", records)
            }
            target.queuedRecords += records
            target.queuedBytes += bytes
            target.counters["appended_total", default: 0] += records
            if let oldest { target.oldestEnqueuedAt = min(target.oldestEnqueuedAt ?? oldest, oldest) }
            return (records, bytes, damaged)
        }
    }

    /// A small integer kept in the queue file (`meta` table).
    package func meta(_ key: String) throws -> Int64? {
        try state.withLock { try $0.openStore(configuration.location.description).meta(key) }
    }

    /// Sets a small integer kept in the queue file (`meta` table), durably.
    package func setMeta(_ key: String, _ value: Int64) throws {
        try state.withLock { try $0.openStore(configuration.location.description).setMeta(key, value) }
    }
}
