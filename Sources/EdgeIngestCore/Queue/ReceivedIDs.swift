#if canImport(Glibc)
import Glibc
#endif

/// The `_id`s a queue received from other clients (the HTTP input of a
/// gateway), so a batch sent again is stored once, and the sessions those
/// clients spoke, so a client restored from an old backup is told to reset.
///
/// Two generations of ids, each a `WITHOUT ROWID` table keyed on the 12-byte
/// id, with the CRC-32 of the record's encoded line (`content`) so a
/// re-send (same content) is told from a conflict (same `_id`, other
/// content; NULL in tables from before it was kept: taken as a re-send).
/// New ids go to the current generation; a lookup checks both. When the
/// current generation is `window` old, the older one is emptied and becomes
/// current. So an id is remembered for at least `window` and at most twice
/// that, forgetting costs one `DELETE` of a whole table (no index on time),
/// and the tables stay at about rate × 2 × window ids (~25 bytes each).
///
/// A record sent by an account (``Receipt/tenant``) is keyed on its id
/// followed by the account's name, so accounts do not share ids; records
/// of a sender without an account on the 12-byte id alone. Rows written
/// before keys had a tenant (`received.tenant_keys_since` in `meta`, the
/// time the first version with tenant keys opened a file that had rows)
/// are still looked up for two windows, by bare id and only as re-sends of
/// the same content: a client re-sending across the upgrade is not stored
/// twice, and a bare row with other content is taken as another account's.
///
/// Each generation has an in-memory ``ReceivedIDFilter`` when it is
/// **complete** — its table was empty when this process opened it, or was
/// emptied by a rotation since, so every key in it went through
/// ``remember(_:receipt:now:)`` and the filter: a key both complete
/// filters rule out was not received, and is not looked up. A generation
/// that held rows at open (a restart) has no filter until the rotation
/// that empties it, so after a restart lookups are made for up to two
/// windows, as before filters existed.
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
    /// Per generation: one insert of ``rowsPerInsert`` rows (one statement
    /// step instead of 32: most of what remembering an id cost).
    private let insertMany: [SQLiteStatement]
    static let rowsPerInsert = 32
    private let lookup: SQLiteStatement
    private let selectSession: SQLiteStatement
    private let upsertSession: SQLiteStatement
    /// When rows keyed on the bare id were last possible (0: never in this
    /// file): they are looked up until two windows after it.
    private let bareKeysUntil: Int64
    /// The key being looked up or inserted: the id, then the tenant's bytes.
    private var key: [UInt8] = []
    /// Per generation (table 0 and 1): its filter when complete, else nil.
    private var filters: [ReceivedIDFilter?] = [nil, nil]
    /// The filter of a rotation written in the open transaction, for the
    /// generation it empties; it replaces that one's at ``didCommit()``.
    private var pendingFilter: ReceivedIDFilter?

    init(store: QueueStore, now: Int64) throws {
        self.store = store
        let db = store.db
        try db.execute(
            """
            CREATE TABLE IF NOT EXISTS received_ids_0(id BLOB PRIMARY KEY, content INTEGER) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS received_ids_1(id BLOB PRIMARY KEY, content INTEGER) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS received_sessions(nonce TEXT PRIMARY KEY, epoch INTEGER NOT NULL, seen_at INTEGER NOT NULL) WITHOUT ROWID;
            """
        )
        // Tables made before the content was kept gain the column (NULL: unknown).
        let columns = try db.prepare("SELECT count(*) FROM pragma_table_info(?1) WHERE name = 'content'")
        for generation in 0..<2 {
            columns.bind(1, "received_ids_\(generation)")
            _ = try columns.step()
            let has = columns.int64(0) > 0
            columns.reset()
            if !has { try db.execute("ALTER TABLE received_ids_\(generation) ADD COLUMN content INTEGER") }
        }
        insert = try (0..<2).map {
            try db.prepare("INSERT OR IGNORE INTO received_ids_\($0)(id, content) VALUES(?1, ?2)")
        }
        let rows = (0..<Self.rowsPerInsert).map { "(?\(2 * $0 + 1), ?\(2 * $0 + 2))" }.joined(separator: ", ")
        insertMany = try (0..<2).map {
            try db.prepare("INSERT OR IGNORE INTO received_ids_\($0)(id, content) VALUES \(rows)")
        }
        lookup = try db.prepare(
            "SELECT content FROM received_ids_0 WHERE id = ?1 UNION ALL SELECT content FROM received_ids_1 WHERE id = ?1 LIMIT 1"
        )
        selectSession = try db.prepare("SELECT epoch FROM received_sessions WHERE nonce = ?1")
        upsertSession = try db.prepare(
            "INSERT INTO received_sessions(nonce, epoch, seen_at) VALUES(?1, ?2, ?3) ON CONFLICT(nonce) DO UPDATE SET epoch = max(epoch, excluded.epoch), seen_at = excluded.seen_at"
        )
        let hasRows = try (0..<2).map { try db.integer("SELECT EXISTS(SELECT 1 FROM received_ids_\($0))") != 0 }
        // A generation empty at open is complete from the start.
        for generation in 0..<2 where !hasRows[generation] {
            filters[generation] = ReceivedIDFilter(capacity: ReceivedIDFilter.minimumCapacity)
        }
        if let since = try store.meta("received.tenant_keys_since") {
            bareKeysUntil = since
        } else {
            bareKeysUntil = hasRows.contains(true) ? now : 0
            try store.setMeta("received.tenant_keys_since", bareKeysUntil)
        }
        current = try store.meta("received.generation").map { $0 & 1 } ?? 0
        if let started = try store.meta("received.since") {
            since = started
        } else {
            try store.setMeta("received.since", now)
            since = now
        }
    }

    /// The records of `batch` whose `_id` was already received (or comes
    /// earlier in it): `resent` with the same content, `conflicts` with
    /// other content; indices over the batch, ascending. Both empty when
    /// the receipt turns deduplication off. `contents`: each record's
    /// content checksum, by index (0 for those not remembered), for
    /// ``remember(_:contents:receipt:now:)``: computed once.
    /// - Throws: ``StaleSession`` when the receipt's session epoch is older
    ///   than one seen before from the same client.
    func repeated(
        in batch: EncodedBatch,
        receipt: Receipt,
        now: Int64
    ) throws -> (resent: [Int], conflicts: [Int], contents: [Int64]) {
        if let session = receipt.session, let sessionKey = receipt.sessionKey, let seen = try epoch(of: sessionKey),
            seen > session.epoch
        {
            throw StaleSession(seenEpoch: seen)
        }
        guard receipt.dedupWindowMilliseconds > 0 else { return ([], [], []) }
        let tenant = receipt.tenant.map { Array($0.utf8) } ?? []
        let checksBareKeys = !tenant.isEmpty && now - bareKeysUntil < 2 * receipt.dedupWindowMilliseconds
        // Ids in strictly ascending order (an edge box's ObjectIds in the
        // order it read them) cannot repeat within the batch: no map then.
        let ascending = Self.strictlyAscending(batch.runs)
        var inBatch: [ObjectId: Int64] = [:]
        var resent: [Int] = []
        var conflicts: [Int] = []
        var contents = [Int64](repeating: 0, count: batch.count)
        var index = 0
        for run in batch.runs {
            try run.ids.withUnsafeBytes { ids in
                try run.payload.withUnsafeBytes { payload in
                    var start = 0
                    for i in 0..<run.count {
                        let id = UnsafeRawBufferPointer(rebasing: ids[i * 12..<i * 12 + 12])
                        defer { start = run.ends[i] }
                        if receipt.skipsIDsGeneratedHere, ObjectId.isGeneratedByThisProcess(id) {
                            index += 1
                            continue
                        }
                        let content = SegmentChecksum.ofRecord(
                            UnsafeRawBufferPointer(rebasing: payload[start..<run.ends[i]])
                        )
                        contents[index] = content
                        let key = ObjectId(unsafeBytes: id)
                        // An earlier record of this batch, else either generation;
                        // `.some(nil)`: received before its content was kept.
                        var earlier: Int64?? =
                            try (ascending ? nil : inBatch[key].map { .some($0) }) ?? stored(id, tenant: tenant)
                        if earlier == nil, checksBareKeys, let bare = try stored(id, tenant: []), bare == content {
                            earlier = .some(bare)  // a re-send across the upgrade to tenant keys
                        }
                        if let earlier {
                            if earlier == nil || earlier == content {
                                resent.append(index)
                            } else {
                                conflicts.append(index)
                            }
                        } else if !ascending {
                            inBatch[key] = content
                        }
                        index += 1
                    }
                }
            }
        }
        return (resent, conflicts, contents)
    }

    /// Whether the batch is one run whose ids are each greater than the one
    /// before (batches of several types take the map).
    private static func strictlyAscending(_ runs: [EncodedBatch.Run]) -> Bool {
        guard runs.count == 1, let run = runs.first else { return runs.isEmpty }
        return run.ids.withUnsafeBytes { ids in
            for i in stride(from: 12, to: run.count * 12, by: 12)
            where memcmp(ids.baseAddress! + i - 12, ids.baseAddress! + i, 12) >= 0 {
                return false
            }
            return true
        }
    }

    /// Records the session and the ids of the stored runs, rotating the
    /// generations when due. Inside the append's transaction. `contents`:
    /// the runs' records' content checksums in order, from
    /// ``repeated(in:receipt:now:)``.
    func remember(_ runs: [EncodedBatch.Run], contents: [Int64], receipt: Receipt, now: Int64) throws {
        if let session = receipt.session, let sessionKey = receipt.sessionKey {
            upsertSession.bind(1, sessionKey)
            upsertSession.bind(2, session.epoch)
            upsertSession.bind(3, now)
            try upsertSession.run()
        }
        guard receipt.dedupWindowMilliseconds > 0 else { return }
        try rotateIfDue(now: now, windowMilliseconds: receipt.dedupWindowMilliseconds)
        let generation = Int(pending?.current ?? current)
        let tenant = receipt.tenant.map { Array($0.utf8) } ?? []
        // The keys, each 12 + tenant bytes, one after another: bound in place.
        let keyLength = 12 + tenant.count
        var keys: [UInt8] = []
        var keyContents: [Int64] = []
        keys.reserveCapacity(contents.count * keyLength)
        keyContents.reserveCapacity(contents.count)
        var index = 0
        for run in runs {
            run.ids.withUnsafeBytes { ids in
                for i in 0..<run.count {
                    let id = UnsafeRawBufferPointer(rebasing: ids[i * 12..<i * 12 + 12])
                    defer { index += 1 }
                    if receipt.skipsIDsGeneratedHere, ObjectId.isGeneratedByThisProcess(id) { continue }
                    keys.append(contentsOf: id)
                    keys.append(contentsOf: tenant)
                    keyContents.append(contents[index])
                }
            }
        }
        try keys.withUnsafeBytes { keys in
            func key(_ row: Int) -> UnsafeRawBufferPointer {
                UnsafeRawBufferPointer(rebasing: keys[row * keyLength..<(row + 1) * keyLength])
            }
            for row in 0..<keyContents.count {
                if let pending, pending.current != current {
                    pendingFilter?.insert(key(row))
                } else {
                    filters[Int(current)]?.insert(key(row))
                }
            }
            var row = 0
            let many = insertMany[generation]
            while keyContents.count - row >= Self.rowsPerInsert {
                for j in 0..<Self.rowsPerInsert {
                    many.bind(Int32(2 * j + 1), blob: key(row + j))
                    many.bind(Int32(2 * j + 2), keyContents[row + j])
                }
                try many.run()
                row += Self.rowsPerInsert
            }
            let one = insert[generation]
            while row < keyContents.count {
                one.bind(1, blob: key(row))
                one.bind(2, keyContents[row])
                try one.run()
                row += 1
            }
        }
    }

    func didCommit() {
        if let pending {
            if pending.current != current { filters[Int(pending.current)] = pendingFilter }
            (current, since) = pending
        }
        pending = nil
        pendingFilter = nil
    }

    func didRollBack() {
        // Keys a rolled-back remember() put in the current filter stay: a
        // false positive costs a lookup, nothing else.
        pending = nil
        pendingFilter = nil
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
        // Emptied: complete from here, sized from the generation now ending.
        pendingFilter = ReceivedIDFilter(
            capacity: ReceivedIDFilter.capacity(after: filters[Int(current)]?.count ?? 0)
        )
        try store.setMeta("received.generation", next)
        try store.setMeta("received.since", now)
        pending = (next, now)
    }

    /// The content checksum a 12-byte id was received with, from either
    /// generation: nil when not received, `.some(nil)` when received before
    /// contents were kept.
    private func stored(_ id: UnsafeRawBufferPointer, tenant: [UInt8]) throws -> Int64?? {
        setKey(id, tenant: tenant)
        return try key.withUnsafeBytes { key in
            if let a = filters[0], let b = filters[1], !a.mightContain(key), !b.mightContain(key) { return nil }
            lookup.bind(1, blob: key)
            defer { lookup.reset() }
            guard try lookup.step() else { return nil }
            return .some(lookup.isNull(0) ? nil : lookup.int64(0))
        }
    }

    /// `key` = the 12-byte id, then the tenant's bytes (none: the bare id).
    private func setKey(_ id: UnsafeRawBufferPointer, tenant: [UInt8]) {
        key.removeAll(keepingCapacity: true)
        key.append(contentsOf: id)
        key.append(contentsOf: tenant)
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
