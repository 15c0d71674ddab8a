import Logging

/// What one sink of a queue holds and has done (``DurableQueue/sinkStatistics()``).
public struct SinkStatistics: Sendable, Hashable {
    /// The sink's name (``QueueRouting/Sink/name``).
    public var name: String
    /// Records routed to it that it has not confirmed, dead-lettered or dropped.
    public var queuedRecords: Int64
    /// Their bytes.
    public var queuedBytes: Int64
    /// Records routed to it since counting began (several sinks only;
    /// with one sink, the queue's ``QueueStatistics/appendedTotal``).
    public var routedTotal: Int64
    /// Records it confirmed.
    public var acknowledgedTotal: Int64
    /// Records it refused one by one (kept as its dead letters).
    public var deadLetteredTotal: Int64
    /// Records dropped for it, by reason (`sink_lagged`, and the queue's
    /// own drops of records it was still owed).
    public var droppedByReason: [String: Int64]
}

extension DurableQueue {
    /// The counter of `sink`'s `what` (`acknowledged_total`, `dropped.sink_lagged`).
    static func sinkCounter(_ sink: String, _ what: String) -> String { "sink.\(sink).\(what)" }

    /// Each configured sink's numbers, in the configuration's order. With
    /// one sink they are the queue's own.
    public func sinkStatistics() throws -> [SinkStatistics] {
        let queue = try statistics()
        return state.withLock { state in
            configuration.routing.sinks.map { sink in
                guard !state.sinks.isSingle, let id = state.sinks.ids[sink.name] else {
                    return SinkStatistics(
                        name: sink.name,
                        queuedRecords: queue.queuedRecords,
                        queuedBytes: queue.queuedBytes,
                        routedTotal: queue.appendedTotal,
                        acknowledgedTotal: queue.acknowledgedTotal,
                        deadLetteredTotal: queue.deadLetterRecords,
                        droppedByReason: queue.droppedByReason
                    )
                }
                let prefix = Self.sinkCounter(sink.name, "")
                var dropped: [String: Int64] = [:]
                for (name, value) in state.counters where name.hasPrefix(prefix + "dropped.") {
                    dropped[String(name.dropFirst(prefix.count + "dropped.".count))] = value
                }
                let queued = state.sinkQueued[id] ?? (0, 0)
                return SinkStatistics(
                    name: sink.name,
                    queuedRecords: queued.records,
                    queuedBytes: queued.bytes,
                    routedTotal: state.counters[prefix + "routed_total"] ?? 0,
                    acknowledgedTotal: state.counters[prefix + "acknowledged_total"] ?? 0,
                    deadLetteredTotal: state.counters[prefix + "dead_lettered_total"] ?? 0,
                    droppedByReason: dropped
                )
            }
        }
    }

    /// The id of sink `name`, or a clear error.
    func sinkID(_ name: String, _ state: borrowing State) throws -> Int {
        if state.sinks.isSingle, name == QueueRouting.defaultSinkName { return 0 }
        guard let id = state.sinks.ids[name] else {
            let names = configuration.routing.sinks.map(\.name).joined(separator: ", ")
            throw EdgeIngestError(
                .invalidConfiguration,
                "The queue \(configuration.location) has no sink '\(name)'; its sinks are: \(names)."
            )
        }
        return id
    }

    // MARK: Moving one sink's cursor

    /// What left the store when a sink's cursor moved: the common prefix's
    /// records from `from` (a segment index) on.
    struct Departure {
        var from: Int64
        var records: Int64
        var bytes: Int64
    }

    /// Moves `sink`'s cursor in segment `id` to record `consumed` (byte
    /// `bytes`); at the segment's end the sink is done with it (its bit is
    /// cleared). The common prefix follows the slowest sink still owed the
    /// segment, and the segment is deleted once no sink is. Call it in a
    /// transaction. Nil: the segment is gone or no longer owed to `sink`.
    func advance(
        sink: Int,
        segment id: Int64,
        to consumed: Int64,
        bytes: Int64,
        _ store: QueueStore
    ) throws
        -> Departure?
    {
        guard let segment = try store.segmentCursor(id) else { return nil }
        let bit = SinkTable.bit(sink)
        var mask = segment.mask
        guard mask & bit != 0 else { return nil }
        var positions = try store.progress(segment: id)
        if consumed >= segment.recordCount {
            mask &= ~bit
            positions[sink] = nil
        } else {
            positions[sink] = (consumed, bytes)
        }
        guard mask != 0 else {
            try store.delete(segment: id)
            try store.deleteProgress(segment: id)
            return Departure(
                from: segment.consumed,
                records: segment.recordCount - segment.consumed,
                bytes: segment.payloadBytes - segment.consumedBytes
            )
        }
        var common = (records: segment.recordCount, bytes: segment.payloadBytes)
        for owing in SinkTable.ids(in: mask) {
            let at = positions[owing] ?? (segment.consumed, segment.consumedBytes)
            if at.records < common.records { common = at }
        }
        if mask & bit != 0, consumed > common.records {
            try store.setProgress(sink: sink, segment: id, records: consumed, bytes: bytes)
        } else {
            try store.deleteProgress(sink: sink, segment: id)
        }
        if common.records > segment.consumed || mask != segment.mask {
            try store.updateCursor(
                segment: id,
                consumed: common.records,
                bytes: common.bytes,
                storedMask: segment.storedMask == nil ? nil : mask | SinkTable.storedFlag
            )
        }
        if common.records > segment.consumed {
            try store.deleteProgress(segment: id, atOrBelow: common.records)
        }
        return Departure(
            from: segment.consumed,
            records: common.records - segment.consumed,
            bytes: common.bytes - segment.consumedBytes
        )
    }

    /// Before a segment is dropped whole (expiry, quarantine): what each
    /// sink was still owed of it is no longer queued for it, and is counted
    /// as dropped for it with `reason`. Nothing with one sink.
    func sinksLose(segment id: Int64, reason: String, _ store: QueueStore, _ state: inout State) throws {
        var change = SinkChange()
        try change.lose(segment: id, reason: reason, store)
        try change.write(store)
        change.apply(&state)
    }

    /// Changes to the sinks' counters and backlogs, gathered in a
    /// transaction and applied to the queue's state after it commits.
    struct SinkChange {
        var counters: [String: Int64] = [:]
        var queued: [Int: (records: Int64, bytes: Int64)] = [:]

        /// What each sink is owed of segment `id`, about to be dropped whole.
        mutating func lose(segment id: Int64, reason: String, _ store: QueueStore) throws {
            let sinks = store.sinkTable
            guard !sinks.isSingle else { return }
            for (sink, owed) in try store.owed(segment: id) where owed.records > 0 {
                guard let name = sinks.byID[sink]?.name else { continue }
                counters[DurableQueue.sinkCounter(name, "dropped." + reason), default: 0] += owed.records
                queued[sink, default: (0, 0)].records -= owed.records
                queued[sink, default: (0, 0)].bytes -= owed.bytes
            }
            try store.deleteProgress(segment: id)
        }

        /// A new segment of `run`, routed by its type (or to sink `only`).
        mutating func route(_ run: EncodedBatch.Run, only: Int? = nil, _ store: QueueStore) {
            let sinks = store.sinkTable
            guard !sinks.isSingle, let mask = only.map(SinkTable.bit) ?? sinks.masks[run.typeName] else { return }
            for sink in SinkTable.ids(in: mask) {
                guard let name = sinks.byID[sink]?.name else { continue }
                counters[DurableQueue.sinkCounter(name, "routed_total"), default: 0] += Int64(run.count)
                queued[sink, default: (0, 0)].records += Int64(run.count)
                queued[sink, default: (0, 0)].bytes += Int64(run.payload.count)
            }
        }

        /// The counters, in the caller's transaction.
        func write(_ store: QueueStore) throws {
            for (name, delta) in counters { try store.add(counter: name, delta) }
        }

        /// After the commit.
        func apply(_ state: inout State) {
            for (name, delta) in counters { state.counters[name, default: 0] += delta }
            for (sink, delta) in queued {
                state.sinkQueued[sink, default: (0, 0)].records += delta.records
                state.sinkQueued[sink, default: (0, 0)].bytes += delta.bytes
            }
        }
    }

    // MARK: The lag policy

    /// Drops behind, for each sink over its lag bound (bytes or age), its
    /// oldest segments until it is within the bound again — except those
    /// it holds in a lease. Counted as ``DropReason/sinkLagged`` for the
    /// sink; records no other sink is owed leave the queue with that
    /// reason. At most once per ``expiryIntervalMilliseconds``, with expiry.
    func dropLaggingSinks(_ store: QueueStore, _ state: inout State) throws -> Bool {
        guard !state.sinks.isSingle else { return false }
        var freed = false
        let offsets = try store.bootOffsets()
        let now = QueueAge.Now.current()
        for (id, sink) in state.sinks.byID.sorted(by: { $0.key < $1.key }) {
            guard sink.maxLagBytes != nil || sink.maxLagMilliseconds != nil else { continue }
            let owedBytes = state.sinkQueued[id]?.bytes ?? 0
            if let bound = sink.maxLagBytes, sink.maxLagMilliseconds == nil, owedBytes <= bound { continue }
            let leased = state.leases[id]?.segmentIDs ?? []
            var over = sink.maxLagBytes.map { owedBytes - $0 } ?? 0
            var victims: [(id: Int64, records: Int64, bytes: Int64)] = []
            // Oldest first, and only as far as needed: the first segment
            // young enough once the bytes are within the bound ends it.
            try store.forEachOwedSegment(sink: id) { segment, records, bytes, enqueuedAt, acceptance in
                if leased.contains(segment) { return true }
                let tooOld =
                    sink.maxLagMilliseconds.map { bound in
                        (QueueAge.of(enqueuedAt: enqueuedAt, acceptance: acceptance, offsets: offsets, now: now) ?? 0)
                            > bound
                    } ?? false
                guard over > 0 || tooOld else { return false }
                victims.append((segment, records, bytes))
                over -= bytes
                return true
            }
            guard !victims.isEmpty else { continue }
            var lagged: Int64 = 0
            var left = Departure(from: 0, records: 0, bytes: 0)
            let counter = Self.sinkCounter(sink.name, "dropped." + DropReason.sinkLagged.name)
            try store.db.transaction {
                for victim in victims {
                    guard let cursor = try store.segmentCursor(victim.id),
                        let gone = try advance(
                            sink: id,
                            segment: victim.id,
                            to: cursor.recordCount,
                            bytes: cursor.payloadBytes,
                            store
                        )
                    else { continue }
                    lagged += victim.records
                    left.records += gone.records
                    left.bytes += gone.bytes
                }
                try store.add(counter: counter, lagged)
                try store.add(counter: "dropped." + DropReason.sinkLagged.name, left.records)
            }
            state.counters[counter, default: 0] += lagged
            state.counters["dropped." + DropReason.sinkLagged.name, default: 0] += left.records
            state.sinkQueued[id, default: (0, 0)].records -= lagged
            state.sinkQueued[id, default: (0, 0)].bytes -= victims.reduce(0) { $0 + $1.bytes }
            state.queuedRecords -= left.records
            state.queuedBytes -= left.bytes
            freed = freed || left.records > 0
            logger.warning(
                "A sink fell too far behind: its oldest readings were dropped for it (counted as sink_lagged); the other sinks still deliver theirs",
                metadata: [
                    "ingest.sink": "\(sink.name)",
                    "queue.lagged": "\(lagged)",
                    "queue.left": "\(left.records)",
                    "queue.max_lag_bytes": "\(sink.maxLagBytes.map(String.init) ?? "none")",
                    "queue.max_lag_s": "\(sink.maxLagMilliseconds.map { String($0 / 1000) } ?? "none")",
                ]
            )
        }
        if freed { state.oldestEnqueuedAt = try store.oldestEnqueuedAt() }
        return freed
    }

    // MARK: Opening

    /// Reads and updates the file's sinks for `routing` (at open): each
    /// configured sink keeps the id it had (the default one is 0; a new one
    /// gets a free id); a sink no longer configured is forgotten: records
    /// still owed to other sinks go on to them, and records owed to it
    /// alone go to the sinks now configured for their type, so editing the
    /// sinks loses nothing.
    static func openSinks(
        _ store: QueueStore,
        configuration: QueueConfiguration,
        logger: Logger
    ) throws -> SinkTable {
        let routing = configuration.routing
        let known = try store.sinkIDs()
        if routing.isSingle, known.isEmpty { return SinkTable() }
        var table = SinkTable()
        table.isSingle = routing.isSingle
        var used = Set(known.values)
        var added: [(Int, String)] = []
        for sink in routing.sinks {
            let id: Int
            if sink.name == QueueRouting.defaultSinkName {
                id = 0
            } else if let existing = known[sink.name], existing != 0 {
                id = existing
            } else {
                guard let free = (1..<QueueRouting.maxSinks).first(where: { !used.contains($0) }) else {
                    throw EdgeIngestError(
                        .invalidConfiguration,
                        "The queue \(configuration.location) has no free sink id for '\(sink.name)': it keeps at most \(QueueRouting.maxSinks) sinks."
                    )
                }
                id = free
            }
            used.insert(id)
            if known[sink.name] != id { added.append((id, sink.name)) }
            table.byID[id] = sink
            table.ids[sink.name] = id
        }
        for type in configuration.objectTypes {
            table.masks[type.name] = table.byID.reduce(Int64(0)) { mask, entry in
                entry.value.takes(type.name) ? mask | SinkTable.bit(entry.key) : mask
            }
        }
        table.everSeveral = try store.meta(Self.severalSinksKey) != nil
        if configuration.readOnly {
            for id in table.byID.keys { table.fromSegment[id] = try store.meta(Self.fromSegmentKey(id)) ?? 0 }
            return table
        }
        // Sink 0 is the default sink even before the file names it.
        var removed = Set(known.values).subtracting(table.byID.keys)
        if known.isEmpty, table.byID[0] == nil { removed.insert(0) }
        try store.db.transaction {
            let now = wallClockMilliseconds()
            let next = (try store.largestSegmentID() ?? 0) + 1
            let names = Dictionary(known.map { ($0.value, $0.key) }, uniquingKeysWith: { a, _ in a })
            for (name, id) in known where !table.byID.keys.contains(id) || table.byID[id]?.name != name {
                try store.deleteSink(id: id)
                try store.deleteMeta(Self.fromSegmentKey(id))
                try store.deleteCounters(prefix: Self.sinkCounter(name, ""))
            }
            // A removed sink's dead letters stay, as a removed sink's (its id may be given again).
            for id in removed where names[id] != nil || id == 0 {
                let orphan = try store.db.prepare("UPDATE dead_letters SET sink = -1 WHERE coalesce(sink, 0) = ?1")
                orphan.bind(1, Int64(id))
                try orphan.run()
            }
            for (id, name) in added where known[name] != id {
                try store.insertSink(id: id, name: name, now: now)
                // From which segment on it is routed what its types get:
                // sink 0 of a file that never named a sink had them all.
                try store.setMeta(Self.fromSegmentKey(id), id == 0 && known.isEmpty ? 0 : next)
                try store.deleteCounters(prefix: Self.sinkCounter(name, ""))
            }
            if !table.isSingle { try store.setMeta(Self.severalSinksKey, now) }
            for id in table.byID.keys { table.fromSegment[id] = try store.meta(Self.fromSegmentKey(id)) ?? 0 }
            if !removed.isEmpty {
                try forget(sinks: removed, table: table, store, configuration: configuration, logger: logger)
            }
            try store.deleteOrphanProgress()
        }
        table.everSeveral = table.everSeveral || !table.isSingle
        return table
    }

    /// `meta` key: the first segment id written after sink `id` was added.
    static func fromSegmentKey(_ id: Int) -> String { "sink_from.\(id)" }
    /// `meta` key: when the file was first opened with several sinks.
    static let severalSinksKey = "several_sinks_since"

    /// Takes sinks `removed` out of every segment (in the open's transaction).
    private static func forget(
        sinks removed: Set<Int>,
        table: SinkTable,
        _ store: QueueStore,
        configuration: QueueConfiguration,
        logger: Logger
    ) throws {
        let gone = removed.reduce(Int64(0)) { $0 | SinkTable.bit($1) }
        let select = try store.db.prepare(
            "SELECT id, type FROM segments WHERE (coalesce(sinks, 1) & ?1) != 0 ORDER BY id"
        )
        select.bind(1, gone)
        var segments: [(Int64, String)] = []
        while try select.step() { segments.append((select.int64(0), select.string(1))) }
        guard !segments.isEmpty else { return }
        var rerouted = 0
        var delivered: Int64 = 0
        var droppedRecords: Int64 = 0
        for (id, type) in segments {
            guard let cursor = try store.segmentCursor(id) else { continue }
            let remaining = cursor.mask & ~gone
            for sink in removed { try store.deleteProgress(sink: sink, segment: id) }
            if remaining == 0 {
                // Owed to removed sinks alone: to the configured sinks of its
                // type that did not exist when it was written (a sink that
                // did, and has no bit, delivered it already) …
                let owed = cursor.recordCount - cursor.consumed
                let heirs = table.byID.filter { id0, sink in sink.takes(type) && (table.fromSegment[id0] ?? 0) > id }
                if !heirs.isEmpty {
                    let mask = heirs.keys.reduce(Int64(0)) { $0 | SinkTable.bit($1) }
                    try store.updateCursor(
                        segment: id,
                        consumed: cursor.consumed,
                        bytes: cursor.consumedBytes,
                        storedMask: SinkTable.stored(mask)
                    )
                    for heir in heirs.values { try store.add(counter: sinkCounter(heir.name, "routed_total"), owed) }
                    rerouted += 1
                } else {
                    // … or, with none, it leaves: no configured sink is owed it.
                    try store.delete(segment: id)
                    try store.deleteProgress(segment: id)
                    try store.add(counter: "dropped." + DropReason.sinkRemoved.name, owed)
                    droppedRecords += owed
                }
                continue
            }
            let ahead = try store.progress(segment: id)
            var common = (records: cursor.recordCount, bytes: cursor.payloadBytes)
            for sink in SinkTable.ids(in: remaining) {
                let at = ahead[sink] ?? (cursor.consumed, cursor.consumedBytes)
                if at.records < common.records { common = at }
            }
            try store.updateCursor(
                segment: id,
                consumed: common.records,
                bytes: common.bytes,
                storedMask: SinkTable.stored(remaining)
            )
            try store.deleteProgress(segment: id, atOrBelow: common.records)
            // Delivered by every sink still routed to them.
            delivered += common.records - cursor.consumed
        }
        if delivered > 0 { try store.add(counter: "acknowledged_total", delivered) }
        let empty = try store.db.prepare("DELETE FROM segments WHERE consumed >= record_count")
        try empty.run()
        logger.notice(
            "Sinks no longer configured were forgotten: readings still owed to other sinks go on to them; readings owed to them alone go to the sinks added since, or are dropped (counted as sink_removed) when every other sink has them",
            metadata: [
                "queue.sinks_forgotten": "\(removed.sorted())",
                "queue.segments_rerouted": "\(rerouted)",
                "queue.delivered_by_the_others": "\(delivered)",
                "queue.dropped_sink_removed": "\(droppedRecords)",
            ]
        )
    }
}

extension DurableQueue {
    /// ``acknowledge(_:count:deadLetters:)`` for one sink of several: its
    /// cursor moves past the lease's first `count` records; records every
    /// sink routed to them is done with leave the queue, counted once by
    /// how this sink — the last of them — was done with each.
    func acknowledgeForSink(
        _ lease: QueueLease,
        count: Int,
        deadLetters: [Int: String],
        _ store: QueueStore,
        _ state: inout State
    ) throws {
        let name = lease.sinkName
        var skipped = Set<Int>()
        var remaining = Int64(count)
        var recordOffset = 0
        var ackedBytes: Int64 = 0
        var left = (records: Int64(0), bytes: Int64(0), dead: Int64(0))
        var sinkDead: Int64 = 0
        var sinkAcknowledged: Int64 = 0
        try store.withoutSync {
            try store.db.transaction {
                for part in lease.parts where remaining > 0 {
                    let inPart = min(remaining, part.toRecord - part.fromRecord)
                    let partBytes = lease.storedBytes(of: part, records: inPart, from: recordOffset)
                    let consumed = part.fromRecord + inPart
                    guard
                        let gone = try advance(
                            sink: lease.sink,
                            segment: part.segmentID,
                            to: consumed,
                            bytes: part.fromByte + partBytes,
                            store
                        )
                    else {
                        // Dropped for this sink meanwhile: counted there.
                        let indices = recordOffset..<(recordOffset + Int(inPart))
                        skipped.formUnion(indices)
                        remaining -= inPart
                        recordOffset += Int(part.toRecord - part.fromRecord)
                        continue
                    }
                    if gone.records > 0 {
                        left.records += gone.records
                        left.bytes += gone.bytes
                        for record in gone.from..<(gone.from + gone.records) {
                            let index = recordOffset + Int(record - part.fromRecord)
                            if index >= 0, deadLetters[index] != nil { left.dead += 1 }
                        }
                    }
                    ackedBytes += partBytes
                    remaining -= inPart
                    recordOffset += Int(part.toRecord - part.fromRecord)
                }
                let now = wallClockMilliseconds()
                let dead = deadLetters.filter { $0.key < count && !skipped.contains($0.key) }
                sinkDead = Int64(dead.count)
                sinkAcknowledged = Int64(count - skipped.count) - sinkDead
                try insertDeadLetters(dead, of: lease, failedAt: now, store)
                try store.add(counter: Self.sinkCounter(name, "acknowledged_total"), sinkAcknowledged)
                if sinkDead > 0 { try store.add(counter: Self.sinkCounter(name, "dead_lettered_total"), sinkDead) }
                if left.records > 0 {
                    try store.add(counter: "acknowledged_total", left.records - left.dead)
                    if left.dead > 0 { try store.add(counter: "dead_lettered_total", left.dead) }
                }
            }
        }
        state.counters[Self.sinkCounter(name, "acknowledged_total"), default: 0] += sinkAcknowledged
        if sinkDead > 0 { state.counters[Self.sinkCounter(name, "dead_lettered_total"), default: 0] += sinkDead }
        state.counters["acknowledged_total", default: 0] += left.records - left.dead
        if left.dead > 0 { state.counters["dead_lettered_total", default: 0] += left.dead }
        state.leases[lease.sink] = nil
        state.sinkQueued[lease.sink, default: (0, 0)].records -= sinkAcknowledged + sinkDead
        state.sinkQueued[lease.sink, default: (0, 0)].bytes -= ackedBytes
        guard left.records > 0 else { return }
        state.queuedRecords -= left.records
        state.queuedBytes -= left.bytes
        state.oldestEnqueuedAt = try store.oldestEnqueuedAt()
        do {
            try store.reclaimFreePages(queueIsEmpty: state.queuedRecords == 0)
        } catch {
            logger.warning("Could not return free pages of the queue file", metadata: ["error": "\(error)"])
        }
    }
}
