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
/// Used only under the queue's lock, inside its transaction.
final class ReceivedIDs {
    private let db: SQLiteConnection
    private var current: Int64
    private var since: Int64
    private var insert: [SQLiteStatement] = []
    private var lookup: [SQLiteStatement] = []
    private let selectSession: SQLiteStatement
    private let upsertSession: SQLiteStatement

    init(db: SQLiteConnection, now: Int64) throws {
        self.db = db
        try db.execute(
            """
            CREATE TABLE IF NOT EXISTS received_ids_0(id BLOB PRIMARY KEY) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS received_ids_1(id BLOB PRIMARY KEY) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS received_sessions(nonce TEXT PRIMARY KEY, epoch INTEGER NOT NULL, seen_at INTEGER NOT NULL) WITHOUT ROWID;
            """
        )
        for generation in 0..<2 {
            insert.append(try db.prepare("INSERT OR IGNORE INTO received_ids_\(generation)(id) VALUES(?1)"))
            lookup.append(try db.prepare("SELECT 1 FROM received_ids_\(generation) WHERE id = ?1"))
        }
        selectSession = try db.prepare("SELECT epoch FROM received_sessions WHERE nonce = ?1")
        upsertSession = try db.prepare(
            "INSERT INTO received_sessions(nonce, epoch, seen_at) VALUES(?1, ?2, ?3) ON CONFLICT(nonce) DO UPDATE SET epoch = max(epoch, excluded.epoch), seen_at = excluded.seen_at"
        )
        let metaGeneration = try db.prepare("SELECT value FROM meta WHERE key = ?1")
        metaGeneration.bind(1, "received.generation")
        current = try metaGeneration.step() ? metaGeneration.int64(0) & 1 : 0
        metaGeneration.reset()
        metaGeneration.bind(1, "received.since")
        since = try metaGeneration.step() ? metaGeneration.int64(0) : now
        metaGeneration.reset()
    }

    /// A rotation written in the open transaction, applied to `current`
    /// and `since` only once that transaction commits (``didCommit()``):
    /// after a rollback, memory and file still agree.
    private var pending: (current: Int64, since: Int64)?

    /// Starts a new generation if the current one is `windowMilliseconds`
    /// old. Call inside the transaction that records ids, then
    /// ``didCommit()`` or ``didRollBack()``.
    func rotateIfDue(now: Int64, windowMilliseconds: Int64) throws {
        if now < since {
            // The wall clock went back: restart the window, forget nothing.
            try setMeta("received.since", now)
            pending = (current, now)
            return
        }
        guard now - since >= windowMilliseconds else { return }
        let next = 1 - current
        try db.execute("DELETE FROM received_ids_\(next)")
        try setMeta("received.generation", next)
        try setMeta("received.since", now)
        pending = (next, now)
    }

    func didCommit() {
        if let pending { (current, since) = pending }
        pending = nil
    }

    func didRollBack() {
        pending = nil
    }

    /// Whether the 12-byte id at `offset` of `ids` was received before.
    func contains(_ ids: UnsafeRawBufferPointer, at offset: Int) throws -> Bool {
        let id = UnsafeRawBufferPointer(rebasing: ids[offset..<offset + 12])
        for statement in lookup {
            statement.bind(1, blob: id)
            defer { statement.reset() }
            if try statement.step() { return true }
        }
        return false
    }

    /// Remembers every id of `ids` (12 bytes each) in the current generation.
    func record(_ ids: UnsafeRawBufferPointer) throws {
        let statement = insert[Int(pending?.current ?? current)]
        var offset = 0
        while offset + 12 <= ids.count {
            statement.bind(1, blob: UnsafeRawBufferPointer(rebasing: ids[offset..<offset + 12]))
            try statement.run()
            offset += 12
        }
    }

    /// The highest epoch seen for a client's session nonce, if any.
    func epoch(of nonce: String) throws -> Int64? {
        selectSession.bind(1, nonce)
        defer { selectSession.reset() }
        return try selectSession.step() ? selectSession.int64(0) : nil
    }

    func recordSession(_ nonce: String, epoch: Int64, now: Int64) throws {
        upsertSession.bind(1, nonce)
        upsertSession.bind(2, epoch)
        upsertSession.bind(3, now)
        try upsertSession.run()
    }

    private func setMeta(_ key: String, _ value: Int64) throws {
        let stmt = try db.prepare("INSERT INTO meta(key, value) VALUES(?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
        stmt.bind(1, key)
        stmt.bind(2, value)
        try stmt.run()
    }
}
