/// Marks in the queue's order of arrival, for "everything written before
/// now has left": ``IngestRealm/waitForUpload(timeout:)`` and upload
/// progress. Segments are numbered in the order they were appended
/// (SQLite's AUTOINCREMENT never reuses a number), and a segment leaves
/// the table only when all its records were acknowledged, dead-lettered,
/// dropped or quarantined.
extension DurableQueue {
    /// The number of the newest segment appended so far (0 for a queue
    /// that never held one): records written before this call are in
    /// segments numbered up to it.
    package func newestSegmentNumber() throws -> Int64 {
        try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            // The sequence, not max(id): a queue emptied since still knows its last number.
            let stmt = try store.db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'segments'")
            return try stmt.step() ? stmt.int64(0) : 0
        }
    }

    /// The records and stored bytes still waiting in segments numbered up
    /// to `mark` (``newestSegmentNumber()``).
    package func pending(upTo mark: Int64) throws -> (records: Int64, bytes: Int64) {
        try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            let stmt = try store.db.prepare(
                "SELECT coalesce(sum(record_count - consumed), 0), coalesce(sum(payload_bytes - consumed_bytes), 0) FROM segments WHERE id <= ?1"
            )
            stmt.bind(1, mark)
            _ = try stmt.step()
            return (stmt.int64(0), stmt.int64(1))
        }
    }
}
