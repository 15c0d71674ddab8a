/// A queued reading as it waits for upload, for inspection.
public struct QueuedRecord: Sendable, Hashable {
    public var id: ObjectId
    public var type: String
    public var schemaVersion: Int64
    /// When it was appended (ms since the epoch).
    public var enqueuedAt: Int64
    /// The record as it will be sent (one JSON object).
    public var json: [UInt8]
}

extension DurableQueue {
    /// The oldest queued records, of `type` if given, at most `limit`:
    /// nothing is leased, changed or counted (works on a queue opened with
    /// ``openForReading(_:logger:)`` while an agent runs).
    ///
    /// ```swift
    /// for record in try queue.peek(type: "WeatherSensor", limit: 10) {
    ///     print(String(decoding: record.json, as: UTF8.self))
    /// }
    /// ```
    public func peek(type: String? = nil, limit: Int) throws -> [QueuedRecord] {
        guard limit > 0 else { return [] }
        return try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            var out: [QueuedRecord] = []
            try store.scanSegments { row in
                if let type, row.type != type { return true }
                guard row.damage == nil else { return true }  // never shown as if it were data
                let first = Int(row.consumed)
                forEachLine(in: row.payload, from: Int(row.consumedBytes)) { index, line in
                    let offset = (first + index) * 12
                    guard offset + 12 <= row.ids.count else { return false }
                    out.append(
                        QueuedRecord(
                            id: ObjectId(unsafeBytes: UnsafeRawBufferPointer(rebasing: row.ids[offset..<offset + 12])),
                            type: row.type,
                            schemaVersion: row.schemaVersion,
                            enqueuedAt: row.enqueuedAt,
                            json: Array(line)
                        )
                    )
                    return out.count < limit
                }
                return out.count < limit
            }
            return out
        }
    }

    /// Deletes the dead letters that failed before `failedBefore` (ms since
    /// the epoch), or every one when it is nil, in one transaction; returns
    /// how many. Their records are gone for good: export them first
    /// (``deadLetters(limit:)``) if they may be needed.
    @discardableResult
    ///   - sink: only the dead letters of this sink (``DeadLetter/sink``); nil: every sink's.
    public func purgeDeadLetters(failedBefore: Int64? = nil, sink: String? = nil) throws -> Int {
        try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            var sinkID: Int?
            if let sink { sinkID = try self.sinkID(sink, state) }
            return try store.db.transaction {
                let stmt = try store.db.prepare(
                    "DELETE FROM dead_letters WHERE failed_at < ?1 AND (?2 IS NULL OR coalesce(sink, 0) = ?2)"
                )
                stmt.bind(1, failedBefore ?? .max)
                if let sinkID { stmt.bind(2, Int64(sinkID)) }
                try stmt.run()
                return store.db.changes
            }
        }
    }
}
