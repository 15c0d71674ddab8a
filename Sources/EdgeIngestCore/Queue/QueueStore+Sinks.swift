/// The statements of several sinks (format 4's `sinks`, `sink_progress`,
/// `segments.sinks`, `dead_letters.sink`; docs/QUEUE.md "Several sinks").
/// A segment's `consumed` is the prefix every sink routed to it is done
/// with; a sink ahead of it has a `sink_progress` row; a sink done with the
/// whole segment has its bit cleared from `segments.sinks`.
extension QueueStore {
    /// A segment's counts and routing, for moving one sink's cursor.
    struct SegmentCursor {
        var recordCount: Int64
        var payloadBytes: Int64
        var consumed: Int64
        var consumedBytes: Int64
        /// `segments.sinks` as stored (nil: sink 0 alone).
        var storedMask: Int64?
        var mask: Int64 { SinkTable.mask(stored: storedMask) }
    }

    /// The largest segment id, or nil when there is none.
    func largestSegmentID() throws -> Int64? {
        let select = try cached("SELECT max(id) FROM segments")
        defer { select.reset() }
        return try select.step() && !select.isNull(0) ? select.int64(0) : nil
    }

    /// The sinks the file knows: name → id.
    func sinkIDs() throws -> [String: Int] {
        let rows = try db.prepare("SELECT id, name FROM sinks")
        var out: [String: Int] = [:]
        while try rows.step() { out[rows.string(1)] = Int(rows.int64(0)) }
        return out
    }

    func insertSink(id: Int, name: String, now: Int64) throws {
        let insert = try db.prepare("INSERT INTO sinks(id, name, added_at) VALUES(?1, ?2, ?3)")
        insert.bind(1, Int64(id))
        insert.bind(2, name)
        insert.bind(3, now)
        try insert.run()
    }

    func deleteSink(id: Int) throws {
        let delete = try db.prepare("DELETE FROM sinks WHERE id = ?1")
        delete.bind(1, Int64(id))
        try delete.run()
    }

    func segmentCursor(_ id: Int64) throws -> SegmentCursor? {
        let select = try cached(
            "SELECT record_count, payload_bytes, consumed, consumed_bytes, sinks FROM segments WHERE id = ?1"
        )
        defer { select.reset() }
        select.bind(1, id)
        guard try select.step() else { return nil }
        return SegmentCursor(
            recordCount: select.int64(0),
            payloadBytes: select.int64(1),
            consumed: select.int64(2),
            consumedBytes: select.int64(3),
            storedMask: select.isNull(4) ? nil : select.int64(4)
        )
    }

    /// The sinks ahead of segment `id`'s common prefix: sink → (records, bytes).
    func progress(segment id: Int64) throws -> [Int: (records: Int64, bytes: Int64)] {
        let select = try cached("SELECT sink, consumed, consumed_bytes FROM sink_progress WHERE segment = ?1")
        defer { select.reset() }
        select.bind(1, id)
        var out: [Int: (Int64, Int64)] = [:]
        while try select.step() { out[Int(select.int64(0))] = (select.int64(1), select.int64(2)) }
        return out
    }

    func setProgress(sink: Int, segment id: Int64, records: Int64, bytes: Int64) throws {
        let upsert = try cached(
            """
            INSERT INTO sink_progress(sink, segment, consumed, consumed_bytes) VALUES(?1, ?2, ?3, ?4)
            ON CONFLICT(sink, segment) DO UPDATE SET consumed = excluded.consumed, consumed_bytes = excluded.consumed_bytes
            """
        )
        defer { upsert.reset() }
        upsert.bind(1, Int64(sink))
        upsert.bind(2, id)
        upsert.bind(3, records)
        upsert.bind(4, bytes)
        try upsert.step()
    }

    /// Deletes segment `id`'s progress rows of `sink` (nil: every sink's)
    /// at or below `records` (nil: all).
    func deleteProgress(sink: Int? = nil, segment id: Int64, atOrBelow records: Int64? = nil) throws {
        let delete = try cached(
            "DELETE FROM sink_progress WHERE segment = ?1 AND (?2 IS NULL OR sink = ?2) AND (?3 IS NULL OR consumed <= ?3)"
        )
        defer { delete.reset() }
        delete.bind(1, id)
        if let sink { delete.bind(2, Int64(sink)) }
        if let records { delete.bind(3, records) }
        try delete.step()
    }

    /// Sets a segment's common prefix and routing.
    func updateCursor(segment id: Int64, consumed: Int64, bytes: Int64, storedMask: Int64?) throws {
        let update = try cached("UPDATE segments SET consumed = ?2, consumed_bytes = ?3, sinks = ?4 WHERE id = ?1")
        defer { update.reset() }
        update.bind(1, id)
        update.bind(2, consumed)
        update.bind(3, bytes)
        if let storedMask { update.bind(4, storedMask) }
        try update.step()
    }

    /// What a sink still owes: records and bytes after its cursor in every
    /// segment routed to it.
    func sinkBacklog(sink: Int) throws -> (records: Int64, bytes: Int64) {
        let select = try db.prepare(
            """
            SELECT coalesce(sum(s.record_count - coalesce(p.consumed, s.consumed)), 0),
                coalesce(sum(s.payload_bytes - coalesce(p.consumed_bytes, s.consumed_bytes)), 0)
            FROM segments s LEFT JOIN sink_progress p ON p.sink = ?1 AND p.segment = s.id
            WHERE (coalesce(s.sinks, 1) & ?2) != 0
            """
        )
        select.bind(1, Int64(sink))
        select.bind(2, SinkTable.bit(sink))
        guard try select.step() else { return (0, 0) }
        return (select.int64(0), select.int64(1))
    }

    /// What each sink routed to segment `id` still owes of it: sink → (records, bytes).
    func owed(segment id: Int64) throws -> [Int: (records: Int64, bytes: Int64)] {
        guard let cursor = try segmentCursor(id) else { return [:] }
        let ahead = try progress(segment: id)
        var out: [Int: (Int64, Int64)] = [:]
        for sink in SinkTable.ids(in: cursor.mask) {
            let at = ahead[sink] ?? (cursor.consumed, cursor.consumedBytes)
            out[sink] = (cursor.recordCount - at.records, cursor.payloadBytes - at.bytes)
        }
        return out
    }

    /// A sink's segments, oldest first, with what it owes of each and when
    /// each was accepted (the lag policy's input), until `body` returns false.
    func forEachOwedSegment(
        sink: Int,
        _ body: (_ id: Int64, _ records: Int64, _ bytes: Int64, _ enqueuedAt: Int64, _ acceptance: Acceptance?) throws
            -> Bool
    ) throws {
        let select = try cached(
            """
            SELECT s.id, s.record_count - coalesce(p.consumed, s.consumed),
                s.payload_bytes - coalesce(p.consumed_bytes, s.consumed_bytes), s.enqueued_at,
                s.boot, s.accepted_boottime, s.clock
            FROM segments s LEFT JOIN sink_progress p ON p.sink = ?1 AND p.segment = s.id
            WHERE (coalesce(s.sinks, 1) & ?2) != 0 ORDER BY s.id
            """
        )
        defer { select.reset() }
        select.bind(1, Int64(sink))
        select.bind(2, SinkTable.bit(sink))
        while try select.step() {
            guard
                try body(select.int64(0), select.int64(1), select.int64(2), select.int64(3), select.acceptance(at: 4))
            else { return }
        }
    }

    func deleteMeta(_ key: String) throws {
        let delete = try db.prepare("DELETE FROM meta WHERE key = ?1")
        delete.bind(1, key)
        try delete.run()
    }

    /// Deletes the counters whose names start with `prefix` (a sink's, `sink.NAME.`).
    func deleteCounters(prefix: String) throws {
        let delete = try db.prepare("DELETE FROM counters WHERE substr(name, 1, length(?1)) = ?1")
        delete.bind(1, prefix)
        try delete.run()
    }

    /// Progress rows of segments that no longer exist (a segment's ids are
    /// never reused, so they are only clutter).
    func deleteOrphanProgress() throws {
        try db.execute("DELETE FROM sink_progress WHERE segment NOT IN (SELECT id FROM segments)")
    }
}
