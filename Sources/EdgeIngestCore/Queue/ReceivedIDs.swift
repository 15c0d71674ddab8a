/// The `_id`s a queue received from other clients (the HTTP input of a
/// gateway), so a batch sent again is stored once, and the sessions those
/// clients spoke, so a client restored from an old backup is told to reset.
///
/// Two generations of ids, each a `WITHOUT ROWID` table keyed on the 12-byte
/// id: new ids go to the current generation; a lookup checks both. When the
/// current generation is `window` old, the older one is emptied and becomes
/// current. So an id is remembered for at least `window` and at most twice
/// that, forgetting costs one `DELETE` of a whole table (no index on time),
/// and the tables stay at about rate × 2 × window ids (~25 bytes each).
///
/// The tables are created when first used: queues of agents that never
/// receive over HTTP do not have them, and older versions ignore them.
/// Used only under the queue's lock; ``remember(_:receipt:now:)`` inside the
/// append's transaction, then ``didCommit()`` or ``didRollBack()``.
final class ReceivedIDs {
    private unowned let store: QueueStore
    private var current: Int64
    /// When the current generation started; in the file from the first use,
    /// so restarts more frequent than the window still rotate.
    private var since: Int64
    /// A rotation written in the open transaction, applied to `current` and
    /// `since` only once that transaction commits: after a rollback, memory
    /// and file still agree.
    private var pending: (current: Int64, since: Int64)?
    private let insert: [SQLiteStatement]
    private let lookup: SQLiteStatement
    private let selectSession: SQLiteStatement
    private let upsertSession: SQLiteStatement

    init(store: QueueStore, now: Int64) throws {
        self.store = store
        let db = store.db
        try db.execute(
            """
            CREATE TABLE IF NOT EXISTS received_ids_0(id BLOB PRIMARY KEY) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS received_ids_1(id BLOB PRIMARY KEY) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS received_sessions(nonce TEXT PRIMARY KEY, epoch INTEGER NOT NULL, seen_at INTEGER NOT NULL) WITHOUT ROWID;
            """
        )
        insert = try (0..<2).map { try db.prepare("INSERT OR IGNORE INTO received_ids_\($0)(id) VALUES(?1)") }
        lookup = try db.prepare(
            "SELECT 1 FROM received_ids_0 WHERE id = ?1 UNION ALL SELECT 1 FROM received_ids_1 WHERE id = ?1 LIMIT 1"
        )
        selectSession = try db.prepare("SELECT epoch FROM received_sessions WHERE nonce = ?1")
        upsertSession = try db.prepare(
            "INSERT INTO received_sessions(nonce, epoch, seen_at) VALUES(?1, ?2, ?3) ON CONFLICT(nonce) DO UPDATE SET epoch = max(epoch, excluded.epoch), seen_at = excluded.seen_at"
        )
        current = try store.meta("received.generation").map { $0 & 1 } ?? 0
        if let started = try store.meta("received.since") {
            since = started
        } else {
            try store.setMeta("received.since", now)
            since = now
        }
    }

    /// Indices of the records of `batch` already received (or repeated
    /// within it), none when the receipt turns deduplication off.
    /// - Throws: ``StaleSession`` when the receipt's session epoch is older
    ///   than one seen before from the same client.
    func repeated(in batch: EncodedBatch, receipt: Receipt) throws -> [Int] {
        if let session = receipt.session, let seen = try epoch(of: session.nonce), seen > session.epoch {
            throw StaleSession(seenEpoch: seen)
        }
        guard receipt.dedupWindowMilliseconds > 0 else { return [] }
        var inBatch = Set<ObjectId>()
        return try batch.indices { ids, offset in
            let id = UnsafeRawBufferPointer(rebasing: ids[offset..<offset + 12])
            return try !inBatch.insert(ObjectId(unsafeBytes: id)).inserted || contains(id)
        }
    }

    /// Records the session and the ids of the stored runs, rotating the
    /// generations when due. Inside the append's transaction.
    func remember(_ runs: [EncodedBatch.Run], receipt: Receipt, now: Int64) throws {
        if let session = receipt.session {
            upsertSession.bind(1, session.nonce)
            upsertSession.bind(2, session.epoch)
            upsertSession.bind(3, now)
            try upsertSession.run()
        }
        guard receipt.dedupWindowMilliseconds > 0 else { return }
        try rotateIfDue(now: now, windowMilliseconds: receipt.dedupWindowMilliseconds)
        let statement = insert[Int(pending?.current ?? current)]
        for run in runs {
            try run.ids.withUnsafeBytes { ids in
                var offset = 0
                while offset + 12 <= ids.count {
                    statement.bind(1, blob: UnsafeRawBufferPointer(rebasing: ids[offset..<offset + 12]))
                    try statement.run()
                    offset += 12
                }
            }
        }
    }

    func didCommit() {
        if let pending { (current, since) = pending }
        pending = nil
    }

    func didRollBack() {
        pending = nil
    }

    private func rotateIfDue(now: Int64, windowMilliseconds: Int64) throws {
        if now < since {
            // The wall clock went back: restart the window, forget nothing.
            try store.setMeta("received.since", now)
            pending = (current, now)
            return
        }
        guard now - since >= windowMilliseconds else { return }
        let next = 1 - current
        try store.db.execute("DELETE FROM received_ids_\(next)")
        try store.setMeta("received.generation", next)
        try store.setMeta("received.since", now)
        pending = (next, now)
    }

    /// Whether a 12-byte id is in either generation.
    private func contains(_ id: UnsafeRawBufferPointer) throws -> Bool {
        lookup.bind(1, blob: id)
        defer { lookup.reset() }
        return try lookup.step()
    }

    private func epoch(of nonce: String) throws -> Int64? {
        selectSession.bind(1, nonce)
        defer { selectSession.reset() }
        return try selectSession.step() ? selectSession.int64(0) : nil
    }
}

/// A received batch's session epoch is older than one already seen from
/// the same client: nothing is stored; the client must reset.
package struct StaleSession: Error {
    package let seenEpoch: Int64
}
