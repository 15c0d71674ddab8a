#if canImport(Glibc)
import Glibc
#endif

/// The `_id`s a queue received from other clients (the HTTP input of a
/// gateway), so a batch sent again is stored once, and the sessions those
/// clients spoke, so a client restored from an old backup is told to reset.
///
/// Ids are kept in **groups**: the ids of one stored batch that share all
/// but the last 7 bits (a bucket of 128 consecutive ObjectIds: one client
/// process within one second) are one row of a `WITHOUT ROWID` table,
/// keyed on the group's first key, with each member's last 7 bits
/// (`members`, a byte each) and the CRC-32 of its encoded line (`contents`,
/// 4 bytes each, little-endian; NULL for rows from before it was kept:
/// taken as re-sends). The content tells a re-send (same content) from a
/// conflict (same `_id`, other content). A key is the account's name
/// (``Receipt/tenant``, none for a sender without one) followed by the
/// 12-byte id, so accounts do not share ids. An edge box's ObjectIds count
/// up, so a batch of 300 is ~3 rows: one insert and one lookup per bucket
/// instead of one per id (docs/BENCHMARKS.md, "Received ids in groups, and
/// group commit"), ~7 bytes per id on disk (measured); ids with nothing in
/// common (one per bucket) cost a row each, as before groups (~37 bytes).
///
/// Two generations, tables `received_groups_0` and `_1`: new ids go to the
/// current one; a lookup checks both. When the current generation is
/// `window` old, the older one is emptied and becomes current. So an id is
/// remembered for at least `window` and at most twice that, and forgetting
/// costs one `DELETE` of a whole table (no index on time). Files from
/// before groups (`received_ids_0`/`_1`, a row per id keyed on the id then
/// the account) are converted when first opened, a group per row, in their
/// generation.
///
/// Rows written before keys had a tenant (`received.tenant_keys_since` in
/// `meta`, the time the first version with tenant keys opened a file that
/// had rows) are still looked up for two windows, by bare id and only as
/// re-sends of the same content: a client re-sending across the upgrade is
/// not stored twice, and a bare row with other content is taken as another
/// account's.
///
/// Each generation has an in-memory ``ReceivedIDFilter`` of its buckets'
/// keys when it is **complete** — its table was empty when this process
/// opened it, or was emptied by a rotation since, so every group in it went
/// through ``remember(_:contents:receipt:now:)`` and the filter: a bucket
/// the filter rules out is not looked up in that generation. A generation
/// that held rows at open (a restart) has no filter until the rotation that
/// empties it.
///
/// The tables are part of the queue format from format 4 (created by its
/// migration, checked at open, by `verify` and kept by `repair`:
/// `QueueStore+GatewayMemory.swift`); format 3 files had them only once
/// a gateway first used them, and the migration keeps those.
/// Used only under the queue's lock; ``remember(_:contents:receipt:now:)``
/// inside the append's transaction, then ``didCommit()`` or
/// ``didRollBack()``. In a group commit, ``repeated(in:receipt:now:)`` of a
/// later batch runs inside that transaction, after the earlier batches'
/// ``remember(_:contents:receipt:now:)``, and sees their ids.
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
    /// Per generation: add one group (or, should its first key be taken,
    /// append to that row).
    private let insertGroup: [SQLiteStatement]
    /// Per generation: the rows whose first key lies in one bucket.
    private let lookupBucket: [SQLiteStatement]
    private let selectSession: SQLiteStatement
    private let upsertSession: SQLiteStatement
    /// When rows keyed on the bare id were last possible (0: never in this
    /// file): they are looked up until two windows after it.
    private let bareKeysUntil: Int64
    /// Per generation (table 0 and 1): its filter when complete, else nil.
    private var filters: [ReceivedIDFilter?] = [nil, nil]
    /// The filter of a rotation written in the open transaction, for the
    /// generation it empties; it replaces that one's at ``didCommit()``.
    private var pendingFilter: ReceivedIDFilter?

    /// The bits of an id's last byte that are a member's own, not its bucket's.
    static let memberBits: UInt8 = 0x7F

    init(store: QueueStore, now: Int64) throws {
        self.store = store
        let db = store.db
        // Opened by a gateway (or an MQTT input with a dedup window): ids
        // are looked up and inserted at keys spread over the table, and the
        // queue's 256 KiB page cache (enough for its appends) missed on most
        // of them. 16 MiB (filled only as pages are read): 14–22 % less
        // gateway CPU with random ids, ~18 MB more peak RSS there
        // (docs/BENCHMARKS.md, "Random ids at a gateway").
        try db.execute("PRAGMA cache_size = -16384")
        insertGroup = try (0..<2).map {
            try db.prepare(
                "INSERT INTO received_groups_\($0)(key, members, contents) VALUES(?1, ?2, ?3) ON CONFLICT(key) DO UPDATE SET members = members || excluded.members, contents = contents || excluded.contents"
            )
        }
        lookupBucket = try (0..<2).map {
            try db.prepare("SELECT key, members, contents FROM received_groups_\($0) WHERE key BETWEEN ?1 AND ?2")
        }
        selectSession = try db.prepare("SELECT epoch FROM received_sessions WHERE nonce = ?1")
        upsertSession = try db.prepare(
            "INSERT INTO received_sessions(nonce, epoch, seen_at) VALUES(?1, ?2, ?3) ON CONFLICT(nonce) DO UPDATE SET epoch = max(epoch, excluded.epoch), seen_at = excluded.seen_at"
        )
        let hadLegacyRows = try Self.convertRowsPerID(db: db, insertGroup: insertGroup)
        let hasRows = try (0..<2).map { try db.integer("SELECT EXISTS(SELECT 1 FROM received_groups_\($0))") != 0 }
        // A generation empty at open is complete from the start.
        for generation in 0..<2 where !hasRows[generation] {
            filters[generation] = ReceivedIDFilter(capacity: ReceivedIDFilter.minimumCapacity)
        }
        if let since = try store.meta("received.tenant_keys_since") {
            bareKeysUntil = since
        } else {
            bareKeysUntil = hasRows.contains(true) || hadLegacyRows ? now : 0
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

    /// Converts the tables of versions before groups (`received_ids_0`/`_1`:
    /// a row per id, keyed on the 12-byte id then the account's name, its
    /// content CRC when kept) into groups of one, in the same generation,
    /// and drops them. In one transaction. True when they held rows.
    private static func convertRowsPerID(db: SQLiteConnection, insertGroup: [SQLiteStatement]) throws -> Bool {
        let legacy = try (0..<2).filter {
            try db.integer("SELECT count(*) FROM sqlite_master WHERE name = 'received_ids_\($0)'") > 0
        }
        guard !legacy.isEmpty else { return false }
        return try db.transaction {
            var converted = false
            for generation in legacy {
                let table = "received_ids_\(generation)"
                let hasContent =
                    try db.integer("SELECT count(*) FROM pragma_table_info('\(table)') WHERE name = 'content'") > 0
                let rows = try db.prepare("SELECT id, \(hasContent ? "content" : "NULL") FROM \(table)")
                let insert = insertGroup[generation]
                while try rows.step() {
                    let old = rows.blob(0)
                    guard old.count >= 12 else { continue }  // never written so; nothing to match
                    converted = true
                    var key = Array(old[12...])
                    key.append(contentsOf: old[0..<12])
                    var content: [UInt8]?
                    if !rows.isNull(1) {
                        var bytes: [UInt8] = []
                        appendContent(rows.int64(1), to: &bytes)
                        content = bytes
                    }
                    try addGroup(insert, key: key, members: [key[key.count - 1] & memberBits], contents: content)
                }
                rows.reset()
                try db.execute("DROP TABLE \(table)")
            }
            return converted
        }
    }

    /// Runs `insert` (one generation's ``insertGroup``) for one group:
    /// its first key, its members' last 7 bits, their content checksums
    /// (nil: not known).
    private static func addGroup(_ insert: SQLiteStatement, key: [UInt8], members: [UInt8], contents: [UInt8]?) throws {
        try key.withUnsafeBytes { key in
            try members.withUnsafeBytes { members in
                insert.bind(1, blob: key)
                insert.bind(2, blob: members)
                guard let contents else { return try insert.run() }
                try contents.withUnsafeBytes { contents in
                    insert.bind(3, blob: contents)
                    try insert.run()
                }
            }
        }
    }

    /// A member's content checksum as stored: its CRC-32, 4 bytes little-endian.
    private static func appendContent(_ content: Int64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: content).littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Calls `body` with each record of `runs` whose id is remembered (all,
    /// unless the receipt leaves out ids generated here): its 12-byte id,
    /// its index over the runs, and its encoded line.
    private static func forEachRemembered(
        in runs: [EncodedBatch.Run],
        receipt: Receipt,
        _ body: (UnsafeRawBufferPointer, Int, UnsafeRawBufferPointer) -> Void
    ) {
        var index = 0
        for run in runs {
            run.ids.withUnsafeBytes { runIDs in
                run.payload.withUnsafeBytes { payload in
                    var start = 0
                    for i in 0..<run.count {
                        let id = UnsafeRawBufferPointer(rebasing: runIDs[i * 12..<i * 12 + 12])
                        defer {
                            start = run.ends[i]
                            index += 1
                        }
                        if receipt.skipsIDsGeneratedHere, ObjectId.isGeneratedByThisProcess(id) { continue }
                        body(id, index, UnsafeRawBufferPointer(rebasing: payload[start..<run.ends[i]]))
                    }
                }
            }
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
        var contents = [Int64](repeating: 0, count: batch.count)
        var ids = ReceivedIDList()
        Self.forEachRemembered(in: batch.runs, receipt: receipt) { id, index, line in
            contents[index] = SegmentChecksum.ofRecord(line)
            ids.append(id, index: index)
        }
        var resent: [Int] = []
        var conflicts: [Int] = []
        var known = BucketMembers()
        var bare = BucketMembers()
        try ids.forEachBucket { bucket in
            let first = bucket[bucket.startIndex].id
            try load(&known, bucketOf: first, tenant: tenant)
            if checksBareKeys { try load(&bare, bucketOf: first, tenant: []) }
            for entry in bucket {
                let index = entry.index
                let member = entry.id.member
                let content = contents[index]
                if let earlier = known[member] {
                    if earlier == BucketMembers.unknownContent || earlier == content {
                        resent.append(index)
                    } else {
                        conflicts.append(index)
                    }
                } else if checksBareKeys, bare[member] == content {
                    resent.append(index)  // a re-send across the upgrade to tenant keys
                    known[member] = content
                } else {
                    known[member] = content  // stored: a later copy in this batch is a repeat
                }
            }
        }
        resent.sort()
        conflicts.sort()
        return (resent, conflicts, contents)
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
        var ids = ReceivedIDList()
        Self.forEachRemembered(in: runs, receipt: receipt) { id, index, _ in ids.append(id, index: index) }
        var key: [UInt8] = []
        var members: [UInt8] = []
        var memberContents: [UInt8] = []
        let insert = insertGroup[generation]
        try ids.forEachBucket { bucket in
            // Repeats were left out before: each id is here once.
            members.removeAll(keepingCapacity: true)
            memberContents.removeAll(keepingCapacity: true)
            for entry in bucket {
                members.append(entry.id.member)
                Self.appendContent(contents[entry.index], to: &memberContents)
            }
            setKey(&key, bucket[bucket.startIndex].id, tenant: tenant)
            try Self.addGroup(insert, key: key, members: members, contents: memberContents)
            key[key.count - 1] &= ~Self.memberBits
            key.withUnsafeBytes { bucketKey in
                if let pending, pending.current != current {
                    pendingFilter?.insert(bucketKey)
                } else {
                    filters[Int(current)]?.insert(bucketKey)
                }
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
        // An earlier batch of the same transaction (a group commit) may have
        // rotated already: go on from there, never twice.
        let current = pending?.current ?? self.current
        let since = pending?.since ?? self.since
        if now < since {
            // The wall clock went back: restart the window, forget nothing.
            try store.setMeta("received.since", now)
            pending = (current, now)
            return
        }
        guard now - since >= windowMilliseconds else { return }
        let next = 1 - current
        try store.db.execute("DELETE FROM received_groups_\(next)")
        // Emptied: complete from here, sized from the generation now ending.
        pendingFilter = ReceivedIDFilter(
            capacity: ReceivedIDFilter.capacity(after: filter(of: Int(current))?.count ?? 0)
        )
        try store.setMeta("received.generation", next)
        try store.setMeta("received.since", now)
        pending = (next, now)
    }

    /// Fills `members` with what both generations hold of the bucket of
    /// `id` under `tenant`: each member's content checksum.
    private func load(_ members: inout BucketMembers, bucketOf id: ReceivedID, tenant: [UInt8]) throws {
        members.clear()
        var low: [UInt8] = []
        setKey(&low, id, tenant: tenant)
        low[low.count - 1] &= ~Self.memberBits
        var high = low
        high[high.count - 1] |= Self.memberBits
        try low.withUnsafeBytes { low in
            try high.withUnsafeBytes { high in
                for generation in 0..<2 where filter(of: generation)?.mightContain(low) ?? true {
                    let lookup = lookupBucket[generation]
                    lookup.bind(1, blob: low)
                    lookup.bind(2, blob: high)
                    defer { lookup.reset() }
                    while try lookup.step() {
                        // Keys of another length (another account's) can sort in between.
                        guard lookup.blob(0).count == low.count else { continue }
                        let rowMembers = lookup.blob(1)
                        let rowContents = lookup.isNull(2) ? nil : lookup.blob(2)
                        for (m, member) in rowMembers.enumerated() {
                            guard let rowContents, rowContents.count >= (m + 1) * 4 else {
                                members[member & Self.memberBits] = BucketMembers.unknownContent
                                continue
                            }
                            members[member & Self.memberBits] = Int64(
                                UInt32(littleEndian: rowContents.loadUnaligned(fromByteOffset: m * 4, as: UInt32.self))
                            )
                        }
                    }
                }
            }
        }
    }

    /// The filter of a generation's table as the open transaction left it:
    /// after a rotation written in it (by an earlier batch of a group
    /// commit), the emptied generation's is the pending one.
    private func filter(of generation: Int) -> ReceivedIDFilter? {
        if let pending, pending.current != current, generation == Int(pending.current) { return pendingFilter }
        return filters[generation]
    }

    /// `key` = the tenant's bytes (none: the bare id), then the 12-byte id.
    private func setKey(_ key: inout [UInt8], _ id: ReceivedID, tenant: [UInt8]) {
        key.removeAll(keepingCapacity: true)
        key.append(contentsOf: tenant)
        id.append(to: &key)
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
