extension DurableQueue {
    /// Takes the oldest records for upload, without deleting them.
    ///
    /// At most `maxRecords` records and about `maxBytes` bytes (always at
    /// least one record, so an oversized record can still leave). One lease
    /// per sink may be outstanding at a time: acknowledge or release it
    /// before taking the next for that sink. With several sinks
    /// (``QueueConfiguration/routing``) each takes the records routed to it
    /// from its own cursor: a sink that is slow or down holds back only
    /// itself.
    ///
    /// - Returns: the lease, or nil when the queue is empty.
    /// A segment that fails its checks (checksum, structure; docs/QUEUE.md
    /// "Integrity") is never part of a lease: it is moved to the quarantine
    /// table, counted in ``QueueStatistics/quarantinedRecords`` and logged,
    /// and the records after it are taken as usual.
    ///
    /// - Throws: ``EdgeIngestError/Code/leaseMisuse`` if a lease is
    ///   outstanding; ``EdgeIngestError/Code/queueCorrupt`` if SQLite itself
    ///   finds the file damaged (run `ingestd repair`).
    ///   - singleType: take only records of the first record's type and
    ///     schema version (the uploader sends one type per request).
    ///   - sink: the sink the records are for (one of
    ///     ``QueueConfiguration/routing``'s; the default sink by default).
    public func take(
        maxRecords: Int,
        maxBytes: Int = .max,
        singleType: Bool = false,
        sink: String = QueueRouting.defaultSinkName
    ) throws -> QueueLease? {
        precondition(maxRecords > 0, "maxRecords must be positive")
        // Expiry first, in its own turn of the lock: the producers it frees
        // space for are resumed outside it, whatever the take does then.
        let waiters = try state.withLock { state in
            try expireIfDue(try state.openStore(configuration.location.description), &state)
        }
        waiters.forEach { $0.resume() }
        return try state.withLock { state -> QueueLease? in
            let store = try state.openStore(configuration.location.description)
            let sinkID = try sinkID(sink, state)
            // With several sinks, only the segments routed to this one, at its cursor.
            let routed: Int? = state.sinks.isSingle ? nil : sinkID
            if let lease = state.leases[sinkID] {
                throw EdgeIngestError(
                    .leaseMisuse,
                    "A lease (\(lease.serial)) of the queue \(configuration.location) for sink '\(sink)' is still outstanding: acknowledge or release it before taking another."
                )
            }
            var payload: [UInt8] = []
            var ids: [ObjectId] = []
            var ends: [Int] = []
            var segments: [QueueLease.Segment] = []
            var parts: [QueueLease.Part] = []
            ids.reserveCapacity(min(maxRecords, 4096))
            ends.reserveCapacity(min(maxRecords, 4096))
            var damaged: (id: Int64, problem: String)?
            let stamps = configuration.acceptanceStamps
            let offsets = stamps.isEmpty ? [:] : try store.bootOffsets()
            let currentBoot = BootIdentity.current.key
            // Segments waiting for the clock are passed over unread.
            let held: ((Int64, String, Int64, Acceptance?) -> Bool)? =
                stamps.values.contains(where: \.holdUnsynchronised)
                ? { _, type, enqueuedAt, acceptance in
                    guard let stamping = stamps[type], stamping.holdUnsynchronised else { return false }
                    let time = AcceptanceTime.of(
                        enqueuedAt: enqueuedAt,
                        acceptance: acceptance,
                        offsets: offsets,
                        currentBoot: currentBoot,
                        hold: true
                    )
                    return time == nil
                }
                : nil
            /// Takes what it can of `row`; false once the lease is full or
            /// must end here.
            // Other sinks' leases: a segment one of them holds is theirs to
            // finish; if it reads as damaged here, it is passed over.
            let othersLeased = state.leasedSegments
            func consume(_ row: QueueStore.SegmentRow) throws -> Bool {
                if let problem = row.damage {
                    guard !othersLeased.contains(row.id) else { return ids.count < maxRecords }
                    damaged = (row.id, problem)
                    return false
                }
                if singleType, let first = segments.first,
                    first.type != row.type || first.schemaVersion != row.schemaVersion
                {
                    return false
                }
                // The acceptance fields this segment's records get, if any.
                var prefix: [UInt8] = []
                if let stamping = stamps[row.type],
                    let time = AcceptanceTime.of(
                        enqueuedAt: row.enqueuedAt,
                        acceptance: row.acceptance,
                        offsets: offsets,
                        currentBoot: currentBoot,
                        hold: false
                    )
                {
                    prefix = stamping.prefix(milliseconds: time.milliseconds, clock: time.clock)
                }
                let available = Int(row.recordCount - row.consumed)
                let room = maxRecords - ids.count
                var take = 0
                var cursor = Int(row.consumedBytes)
                let base = payload.count
                let start = cursor
                while take < min(available, room) {
                    guard let newline = firstOffset(of: UInt8(ascii: "\n"), in: row.payload, from: cursor) else {
                        throw EdgeIngestError(
                            .queueCorrupt,
                            "Segment \(row.id) of the queue \(configuration.location) has fewer records than it declares. Export what is readable and move the file aside."
                        )
                    }
                    let next = newline + 1
                    let end = base + (next - start) + (take + 1) * prefix.count
                    if !ids.isEmpty || take > 0, end > maxBytes { break }
                    ends.append(end)
                    if !prefix.isEmpty {
                        // The record with the acceptance fields after its `{`.
                        payload.append(row.payload[cursor])
                        payload.append(contentsOf: prefix)
                        payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: row.payload[(cursor + 1)..<next]))
                    }
                    let idOffset = (Int(row.consumed) + take) * 12
                    ids.append(
                        ObjectId(unsafeBytes: UnsafeRawBufferPointer(rebasing: row.ids[idOffset..<idOffset + 12]))
                    )
                    take += 1
                    cursor = next
                }
                guard take > 0 else { return false }
                if prefix.isEmpty {
                    payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: row.payload[start..<cursor]))
                }
                segments.append(
                    QueueLease.Segment(
                        type: row.type,
                        schemaVersion: row.schemaVersion,
                        enqueuedAt: row.enqueuedAt,
                        recordCount: take
                    )
                )
                parts.append(
                    QueueLease.Part(
                        segmentID: row.id,
                        segmentRecordCount: row.recordCount,
                        fromRecord: row.consumed,
                        toRecord: row.consumed + Int64(take),
                        fromByte: row.consumedBytes,
                        addedBytesPerRecord: prefix.count
                    )
                )
                // Continue only if this segment was taken whole and room remains.
                return take == available && ids.count < maxRecords && payload.count < maxBytes
            }
            let order = configuration.segmentOrderSQL
            repeat {
                if let found = damaged {
                    try quarantine(segment: found.id, problem: found.problem, &state)
                    damaged = nil
                }
                if let order {
                    // Priorities or newest first: the segments in that order, each read by id.
                    // Ids at the front whose segments are gone (delivered,
                    // dropped) are forgotten; a take that found only such
                    // ids looks further.
                    var gone = 0
                    repeat {
                        gone = 0
                        var leading = true
                        for id in try store.segmentIDs(orderedBy: order, limit: maxRecords + 64, sink: routed) {
                            var exists = false
                            var more = true
                            try store.scanSegments(
                                from: id,
                                sink: routed,
                                skip: { rowID, type, enqueuedAt, acceptance in
                                    if rowID == id { exists = true }
                                    return held?(rowID, type, enqueuedAt, acceptance) ?? false
                                }
                            ) { row in
                                if row.id == id { more = try consume(row) }
                                return false
                            }
                            if !exists, leading { gone += 1 } else { leading = false }
                            if !more { break }
                        }
                        store.forgetOrderedSegments(gone, sink: routed)
                    } while gone > 0 && ids.isEmpty && damaged == nil
                } else if let routed {
                    // From the first segment this sink may still be owed:
                    // the others' backlog is not read again at every take.
                    var first: Int64?
                    try store.scanSegments(
                        from: state.sinkScanFrom[routed] ?? 0,
                        sink: routed,
                        skip: { id, type, enqueuedAt, acceptance in
                            if first == nil { first = id }
                            return held?(id, type, enqueuedAt, acceptance) ?? false
                        }
                    ) { row in
                        if first == nil { first = row.id }
                        return try consume(row)
                    }
                    state.sinkScanFrom[routed] = try first ?? store.largestSegmentID().map { $0 + 1 }
                } else {
                    try store.scanSegments(skip: held, consume)
                }
            } while damaged != nil && ids.isEmpty
            if let found = damaged {
                try quarantine(segment: found.id, problem: found.problem, &state)
            }
            guard let first = ids.first else { return nil }
            state.leaseSerial += 1
            state.leases[sinkID] = Lease(serial: state.leaseSerial, segmentIDs: Set(parts.map(\.segmentID)))
            return QueueLease(
                id: "\(first.hexString)-\(ids.count)",
                payload: payload,
                recordIDs: ids,
                recordEnds: ends,
                segments: segments,
                parts: parts,
                serial: state.leaseSerial,
                sink: sinkID,
                sinkName: sink
            )
        }
    }

    /// Deletes the lease's first `count` records (all by default) in one
    /// transaction, because the backend confirmed them. The rest, if any,
    /// stay at the head of the queue. Ends the lease.
    ///
    /// - Parameter deadLetters: records of the acknowledged part that the
    ///   backend refused one by one (lease index → reason). They are moved
    ///   to the dead-letter table in the same transaction instead of being
    ///   lost, and counted in ``QueueStatistics/deadLetterRecords``.
    public func acknowledge(_ lease: QueueLease, count: Int? = nil, deadLetters: [Int: String] = [:]) throws {
        let count = count ?? lease.recordCount
        precondition(count >= 0 && count <= lease.recordCount, "count must be within the lease")
        let waiters = try state.withLock { state -> [CheckedContinuation<Void, Never>] in
            let store = try state.openStore(configuration.location.description)
            try checkOutstanding(lease, state)
            guard state.sinks.isSingle else {
                try acknowledgeForSink(lease, count: count, deadLetters: deadLetters, store, &state)
                return spaceFreed(&state)
            }
            let dead = Int64(deadLetters.keys.filter { $0 < count }.count)
            var remaining = Int64(count)
            var bytes: Int64 = 0
            var recordOffset = 0
            // Losing this commit to a power cut only re-sends these records (same _ids).
            try store.withoutSync {
                try store.db.transaction {
                    for part in lease.parts where remaining > 0 {
                        let inPart = min(remaining, part.toRecord - part.fromRecord)
                        let partBytes = lease.storedBytes(of: part, records: inPart, from: recordOffset)
                        let consumed = part.fromRecord + inPart
                        if consumed == part.segmentRecordCount {
                            try store.delete(segment: part.segmentID)
                        } else {
                            try store.consume(
                                segment: part.segmentID,
                                records: consumed,
                                bytes: part.fromByte + partBytes
                            )
                        }
                        bytes += partBytes
                        remaining -= inPart
                        recordOffset += Int(part.toRecord - part.fromRecord)
                    }
                    let now = wallClockMilliseconds()
                    try insertDeadLetters(deadLetters.filter { $0.key < count }, of: lease, failedAt: now, store)
                    try store.add(counter: "dead_lettered_total", dead)
                    try store.add(counter: "acknowledged_total", Int64(count) - dead)
                }
            }
            state.counters["dead_lettered_total", default: 0] += dead
            state.counters["acknowledged_total", default: 0] -= dead
            state.leases[lease.sink] = nil
            state.queuedRecords -= Int64(count)
            state.queuedBytes -= bytes
            state.counters["acknowledged_total", default: 0] += Int64(count)
            state.oldestEnqueuedAt = try store.oldestEnqueuedAt()
            // Housekeeping after the commit: the acknowledgement is committed
            // whether or not this succeeds (durable with the next append's
            // fsync, docs/QUEUE.md invariant 6).
            do {
                try store.reclaimFreePages(queueIsEmpty: state.queuedRecords == 0)
            } catch {
                logger.warning("Could not return free pages of the queue file", metadata: ["error": "\(error)"])
            }
            return spaceFreed(&state)
        }
        waiters.forEach { $0.resume() }
    }

    /// Ends the lease without deleting anything: its records will be taken
    /// again, first.
    public func release(_ lease: QueueLease) throws {
        try state.withLock { state in
            try checkOutstanding(lease, state)
            state.leases[lease.sink] = nil
        }
    }

    private func checkOutstanding(_ lease: QueueLease, _ state: borrowing State) throws {
        guard let current = state.leases[lease.sink], current.serial == lease.serial else {
            throw EdgeIngestError(
                .leaseMisuse,
                "This lease of the queue \(configuration.location) is not outstanding: it was already acknowledged or released, or came from another queue."
            )
        }
    }

    /// Moves the lease's records `letters` (lease index → reason) to the
    /// dead-letter table as stored, with the lease's sink, in the caller's
    /// transaction.
    func insertDeadLetters(
        _ letters: [Int: String],
        of lease: QueueLease,
        failedAt now: Int64,
        _ store: QueueStore
    )
        throws
    {
        for (index, reason) in letters.sorted(by: { $0.key < $1.key }) {
            let segment = lease.segment(containing: index)
            try store.insertDeadLetter(
                id: lease.recordIDs[index],
                type: segment.type,
                schemaVersion: segment.schemaVersion,
                enqueuedAt: segment.enqueuedAt,
                failedAt: now,
                reason: reason,
                payload: lease.storedRecordJSON(at: index)[...],
                sink: lease.sink
            )
        }
    }
}
