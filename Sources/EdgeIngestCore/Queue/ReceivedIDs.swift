#if canImport(Glibc)
import Glibc
#endif

/// The `_id`s a queue received from other clients (the HTTP input of a
/// gateway), so a batch sent again is stored once, and the sessions those
/// clients spoke, so a client restored from an old backup is told to reset.
/// With each id the CRC-32 of its encoded line: it tells a re-send (same
/// content) from a conflict (same `_id`, other content). Keys start with
/// the account's name (``Receipt/tenant``, none for a sender without one),
/// so accounts do not share ids.
///
/// A stored batch's ids are sorted into **buckets** (all but the last 7
/// bits: 128 consecutive ObjectIds, one client process within a second)
/// and kept two ways:
/// - A bucket with several of the batch's ids (an edge box's counting
///   ObjectIds: a batch of 300 is ~3 buckets) is a **group**, one row of
///   `received_groups_0`/`_1` keyed on its first id, with each member's
///   last 7 bits and content: one insert for many ids.
/// - An id alone in its bucket (ids with nothing in common: random ones)
///   is **pending** — in memory (``PendingReceivedIDs``) and in a row of
///   `received_pending` written with its batch, for a restart — and
///   **folded** about once a second into **runs** (``ReceivedIDRun``,
///   `received_runs_0`/`_1`: a row per account and 5-byte id prefix),
///   sorted, each run rewritten once per fold. As a row each, such ids
///   cost a b-tree insert and a page written per id and commit (~3.5× the
///   CPU of counting ids: docs/BENCHMARKS.md, "Random ids at a gateway").
///
/// Two generations: new ids go to the current one; a lookup checks both,
/// groups, runs and pending ids. When the current generation is `window`
/// old, the pending ids are folded into it, the older one is emptied and
/// becomes current. So an id is remembered for at least `window` and at
/// most twice that, and forgetting costs a `DELETE` of whole tables.
/// Files from before groups (`received_ids_0`/`_1`, a row per id) are
/// converted into groups when first opened, in their generation; format 3
/// files' groups are kept as they are (NULL contents, from before contents
/// were kept, are taken as re-sends).
///
/// Rows written before keys had a tenant (`received.tenant_keys_since` in
/// `meta`, the time the first version with tenant keys opened a file that
/// had rows) are still looked up for two windows, by bare id and only as
/// re-sends of the same content: a client re-sending across the upgrade is
/// not stored twice, and a bare row with other content is taken as another
/// account's.
///
/// Each generation has an in-memory ``ReceivedIDFilter`` of its buckets
/// when it is **complete** — its groups and runs were empty when this
/// process opened them, or were emptied by a rotation since, so every id
/// in them went through the filter (a pending id when it came): an id
/// whose bucket the filter rules out is looked up nowhere in that
/// generation. A generation that held rows at open (a restart) has no
/// filter until the rotation that empties it.
///
/// The tables are part of the queue format from format 4 (created by its
/// migration, checked at open, by `verify` and kept by `repair`:
/// `QueueStore+GatewayMemory.swift`); format 3 files had the groups only
/// once a gateway first used them, and the migration keeps those.
/// Used only under the queue's lock; ``remember(_:contents:receipt:now:sorted:)``
/// inside the append's transaction, then ``didCommit()`` or
/// ``didRollBack()``. In a group commit, ``repeated(in:receipt:now:)`` of a
/// later batch runs inside that transaction, after the earlier batches'
/// ``remember(_:contents:receipt:now:sorted:)``, and sees their ids.
final class ReceivedIDs {
    /// How often pending ids are folded into the runs, and how many may
    /// wait at most.
    static let foldIntervalMilliseconds: Int64 = 1000
    static let foldCount = 1 << 17

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
    /// Per generation: the groups whose first key lies in one bucket.
    private let lookupBucket: [SQLiteStatement]
    /// Per generation: one run by key, and its replacement.
    private let selectRun: [SQLiteStatement]
    private let replaceRun: [SQLiteStatement]
    private let insertPending: SQLiteStatement
    private let selectSession: SQLiteStatement
    private let upsertSession: SQLiteStatement
    /// When rows keyed on the bare id were last possible (0: never in this
    /// file): they are looked up until two windows after it.
    private let bareKeysUntil: Int64
    /// Per generation (runs 0 and 1): its filter when complete, else nil.
    private var filters: [ReceivedIDFilter?] = [nil, nil]
    /// The filter of a rotation written in the open transaction, for the
    /// generation it empties; it replaces that one's at ``didCommit()``.
    private var pendingFilter: ReceivedIDFilter?
    /// The ids not yet folded into the runs (of the current generation).
    private var unfolded = PendingReceivedIDs()
    /// Set by a rollback: `unfolded` is read again from `received_pending`.
    private var unfoldedNeedsReading = false

    /// The bits of an id's last byte that are a member's own, not its bucket's.
    static let memberBits: UInt8 = 0x7F

    init(store: QueueStore, now: Int64) throws {
        self.store = store
        let db = store.db
        // Opened by a gateway (or an MQTT input with a dedup window): groups
        // and runs are looked up at keys spread over their tables, past the
        // queue's 256 KiB page cache (enough for its appends). 16 MiB by
        // default (filled only as pages are read): with groups alone 14–22 %
        // less CPU with random ids; with runs, 0.97 of it at the median of
        // six pairs, for ~18 MB more peak RSS (docs/BENCHMARKS.md, "Random
        // ids at a gateway"). Less under a small memory limit, where that
        // RSS is what the kernel kills for (docs/RELIABILITY.md, "Memory limits").
        try db.execute("PRAGMA cache_size = -\(max(256, store.receivedIDsCacheBytes >> 10))")
        insertGroup = try (0..<2).map {
            try db.prepare(
                "INSERT INTO received_groups_\($0)(key, members, contents) VALUES(?1, ?2, ?3) ON CONFLICT(key) DO UPDATE SET members = members || excluded.members, contents = contents || excluded.contents"
            )
        }
        lookupBucket = try (0..<2).map {
            try db.prepare("SELECT key, members, contents FROM received_groups_\($0) WHERE key BETWEEN ?1 AND ?2")
        }
        selectRun = try (0..<2).map { try db.prepare("SELECT ids, contents FROM received_runs_\($0) WHERE key = ?1") }
        replaceRun = try (0..<2).map {
            try db.prepare(
                "INSERT INTO received_runs_\($0)(key, ids, contents) VALUES(?1, ?2, ?3) ON CONFLICT(key) DO UPDATE SET ids = excluded.ids, contents = excluded.contents"
            )
        }
        insertPending = try db.prepare("INSERT INTO received_pending(tenant, ids, contents) VALUES(?1, ?2, ?3)")
        selectSession = try db.prepare("SELECT epoch FROM received_sessions WHERE nonce = ?1")
        upsertSession = try db.prepare(
            "INSERT INTO received_sessions(nonce, epoch, seen_at) VALUES(?1, ?2, ?3) ON CONFLICT(nonce) DO UPDATE SET epoch = max(epoch, excluded.epoch), seen_at = excluded.seen_at"
        )
        let hadLegacyRows = try Self.convertRowsPerID(db: db, insertGroup: insertGroup)
        let hasGroups = try (0..<2).map { try db.integer("SELECT EXISTS(SELECT 1 FROM received_groups_\($0))") != 0 }
        let hasRuns = try (0..<2).map { try db.integer("SELECT EXISTS(SELECT 1 FROM received_runs_\($0))") != 0 }
        // A generation empty at open is complete from the start.
        for generation in 0..<2 where !hasGroups[generation] && !hasRuns[generation] {
            filters[generation] = ReceivedIDFilter(capacity: ReceivedIDFilter.minimumCapacity)
        }
        if let since = try store.meta("received.tenant_keys_since") {
            bareKeysUntil = since
        } else {
            bareKeysUntil = hasGroups.contains(true) || hadLegacyRows ? now : 0
            try store.setMeta("received.tenant_keys_since", bareKeysUntil)
        }
        current = try store.meta("received.generation").map { $0 & 1 } ?? 0
        if let started = try store.meta("received.since") {
            since = started
        } else {
            try store.setMeta("received.since", now)
            since = now
        }
        try readUnfolded(now: now)
    }

    /// Reads `received_pending` into ``unfolded`` (at open, after a rollback).
    private func readUnfolded(now: Int64) throws {
        unfolded.removeAll()
        let rows = try store.db.prepare("SELECT tenant, ids, contents FROM received_pending ORDER BY id")
        var key: [UInt8] = []
        while try rows.step() {
            let tenantBytes = Array(rows.blob(0))
            let tenant = unfolded.number(of: tenantBytes)
            let ids = rows.blob(1)
            let contents = rows.blob(2)
            // A damaged row (which `verify` reports) is deleted by the next
            // fold: its ids are forgotten, and the time kept for status.
            guard ReceivedIDRun.pendingDamage(ids: ids, contents: contents) == nil else {
                try forgetDamagedMemory()
                continue
            }
            for i in 0..<ids.count / 12 {
                // The current generation's (a rotation folds them first): in its filter.
                key.removeAll(keepingCapacity: true)
                key.append(contentsOf: tenantBytes)
                key.append(contentsOf: ids[i * 12..<i * 12 + 12])
                key[key.count - 1] &= ~Self.memberBits
                key.withUnsafeBytes { filters[Int(current)]?.insert($0) }
                unfolded.insert(
                    tenant: tenant,
                    id: ReceivedID(UnsafeRawBufferPointer(rebasing: ids[i * 12..<i * 12 + 12])),
                    content: ReceivedIDRun.content(in: contents, at: i),
                    now: now - Self.foldIntervalMilliseconds  // folded with the next batch
                )
            }
        }
        unfoldedNeedsReading = false
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
                        ReceivedIDRun.appendContent(UInt32(truncatingIfNeeded: rows.int64(1)), to: &bytes)
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
    ) throws -> Repeats {
        if let session = receipt.session, let sessionKey = receipt.sessionKey, let seen = try epoch(of: sessionKey),
            seen > session.epoch
        {
            throw StaleSession(seenEpoch: seen)
        }
        guard receipt.dedupWindowMilliseconds > 0 else { return Repeats() }
        if unfoldedNeedsReading { try readUnfolded(now: now) }
        let tenant = receipt.tenant.map { Array($0.utf8) } ?? []
        var contents = [Int64](repeating: 0, count: batch.count)
        var ids = ReceivedIDList()
        Self.forEachRemembered(in: batch.runs, receipt: receipt) { id, index, line in
            contents[index] = SegmentChecksum.ofRecord(line)
            ids.append(id, index: index)
        }
        ids.sort()
        let entries = ids.entries
        // What was received before, per entry (in id order): its content.
        var known = [Int64?](repeating: nil, count: entries.count)
        let (candidates, hashes) = candidateGenerations(of: entries, tenant: tenant)
        try lookUpGroups(
            entries,
            candidates: candidates,
            contents: contents,
            tenant: tenant,
            now: now,
            window: receipt.dedupWindowMilliseconds,
            into: &known
        )
        // Pending ids are the current generation's, in its filter.
        let pendingBit = UInt8(1) << (pending?.current ?? current)
        if !unfolded.isEmpty, let number = unfolded.knownNumber(of: tenant) {
            for i in entries.indices where known[i] == nil && candidates[i] & pendingBit != 0 {
                if let content = unfolded.content(tenant: number, id: entries[i].id) { known[i] = Int64(content) }
            }
        }
        try lookUpRuns(entries, candidates: candidates, tenant: tenant, into: &known)
        var resent: [Int] = []
        var conflicts: [Int] = []
        // A later copy of an id in this batch is compared with the first.
        var earlier: Int64?
        for i in entries.indices {
            let content = contents[entries[i].index]
            let before = i > 0 && entries[i - 1].id == entries[i].id ? earlier : known[i]
            if let before {
                if before == BucketMembers.unknownContent || before == content {
                    resent.append(entries[i].index)
                } else {
                    conflicts.append(entries[i].index)
                }
            }
            earlier = before ?? content  // stored: a later copy in this batch is a repeat
        }
        resent.sort()
        conflicts.sort()
        return Repeats(resent: resent, conflicts: conflicts, contents: contents, sorted: ids, hashes: hashes)
    }

    /// What ``repeated(in:receipt:now:)`` found.
    struct Repeats {
        var resent: [Int] = []
        var conflicts: [Int] = []
        var contents: [Int64] = []
        /// The batch's remembered ids, sorted: for
        /// ``remember(_:contents:receipt:now:sorted:)`` when the whole batch is stored.
        var sorted = ReceivedIDList()
        /// Per entry of `sorted`: its bucket's filter hashes.
        var hashes: [ReceivedIDFilter.Hashes] = []
    }

    /// Per entry (in id order), the generations (bit 0 and 1) whose filter
    /// does not rule its bucket out, and its bucket's filter hashes (for
    /// ``remember(_:contents:receipt:now:sorted:)``). One check per bucket
    /// and generation, all hashes first: the checks' cache misses, each
    /// independent of the others, overlap.
    private func candidateGenerations(
        of entries: [ReceivedIDList.Entry],
        tenant: [UInt8]
    ) -> (candidates: [UInt8], hashes: [ReceivedIDFilter.Hashes]) {
        var hashes = [ReceivedIDFilter.Hashes](repeating: (0, 0), count: entries.count)
        var starts: [Int] = []
        var key = BucketKey(tenant: tenant)
        var start = 0
        while start < entries.count {
            var end = start + 1
            while end < entries.count, entries[end].id.isInBucket(of: entries[start].id) { end += 1 }
            let bucket = key.withBytes(of: entries[start].id) { ReceivedIDFilter.hashes($0) }
            for i in start..<end { hashes[i] = bucket }
            starts.append(start)
            start = end
        }
        var candidates = [UInt8](repeating: 0, count: entries.count)
        for generation in 0..<2 {
            let bit = UInt8(1) << generation
            guard let filter = filter(of: generation) else {
                for i in candidates.indices { candidates[i] |= bit }
                continue
            }
            guard filter.count > 0 else { continue }
            for (b, start) in starts.enumerated() where filter.mightContain(hashes: hashes[start]) {
                let end = b + 1 < starts.count ? starts[b + 1] : entries.count
                for i in start..<end { candidates[i] |= bit }
            }
        }
        return (candidates, hashes)
    }

    /// Fills `known` from the runs, for the entries not known yet in the
    /// generations their filter leaves possible: each run read once.
    private func lookUpRuns(
        _ entries: [ReceivedIDList.Entry],
        candidates: [UInt8],
        tenant: [UInt8],
        into known: inout [Int64?]
    ) throws {
        var runKey: [UInt8] = []
        var start = 0
        while start < entries.count {
            var end = start + 1
            while end < entries.count, ReceivedIDRun.sameRun(entries[end].id, entries[start].id) { end += 1 }
            defer { start = end }
            for generation in 0..<2 {
                let bit = UInt8(1) << generation
                guard (start..<end).contains(where: { known[$0] == nil && candidates[$0] & bit != 0 }) else { continue }
                ReceivedIDRun.setKey(&runKey, tenant: tenant, id: entries[start].id)
                let select = selectRun[generation]
                try runKey.withUnsafeBytes { key in
                    select.bind(1, blob: key)
                    defer { select.reset() }
                    guard try select.step() else { return }
                    let ids = select.blob(0)
                    let contents = select.blob(1)
                    // Sizes only (a row's order is `verify`'s to check: O(n) per lookup here).
                    guard ReceivedIDRun.hasConsistentSizes(ids: ids, contents: contents) else { return }
                    for i in start..<end where known[i] == nil && candidates[i] & bit != 0 {
                        let suffix = ReceivedIDRun.suffix(entries[i].id)
                        if let content = ReceivedIDRun.find(suffix, ids: ids, contents: contents) {
                            known[i] = Int64(content)
                        }
                    }
                }
            }
        }
    }

    /// Fills `known` from the groups, bucket by bucket in the generations
    /// their filter leaves possible, and from rows keyed on the bare id
    /// while those may exist — only as re-sends of the same content.
    private func lookUpGroups(
        _ entries: [ReceivedIDList.Entry],
        candidates: [UInt8],
        contents: [Int64],
        tenant: [UInt8],
        now: Int64,
        window: Int64,
        into known: inout [Int64?]
    ) throws {
        let checksBareKeys = !tenant.isEmpty && now - bareKeysUntil < 2 * window
        var members = BucketMembers()
        var bare = BucketMembers()
        var start = 0
        while start < entries.count {
            var end = start + 1
            while end < entries.count, entries[end].id.isInBucket(of: entries[start].id) { end += 1 }
            defer { start = end }
            guard candidates[start] != 0 || checksBareKeys else { continue }
            try load(&members, bucketOf: entries[start].id, tenant: tenant, generations: candidates[start])
            if checksBareKeys { try load(&bare, bucketOf: entries[start].id, tenant: [], generations: nil) }
            for i in start..<end {
                let member = entries[i].id.member
                if let content = members[member] {
                    known[i] = content
                } else if checksBareKeys, bare[member] == contents[entries[i].index] {
                    known[i] = bare[member]  // a re-send across the upgrade to tenant keys
                }
            }
        }
    }

    /// Records the session and the ids of the stored runs, folding the
    /// pending ids and rotating the generations when due. Inside the
    /// append's transaction. `contents`: the runs' records' content
    /// checksums in order, from ``repeated(in:receipt:now:)``; `sorted`:
    /// its sorted ids when the runs are the whole batch it looked at.
    func remember(
        _ runs: [EncodedBatch.Run],
        contents: [Int64],
        receipt: Receipt,
        now: Int64,
        sorted: (list: ReceivedIDList, hashes: [ReceivedIDFilter.Hashes])? = nil
    ) throws {
        if let session = receipt.session, let sessionKey = receipt.sessionKey {
            upsertSession.bind(1, sessionKey)
            upsertSession.bind(2, session.epoch)
            upsertSession.bind(3, now)
            try upsertSession.run()
        }
        guard receipt.dedupWindowMilliseconds > 0 else { return }
        if unfoldedNeedsReading { try readUnfolded(now: now) }
        if let first = unfolded.since,
            now - first >= Self.foldIntervalMilliseconds || now < first || unfolded.count >= Self.foldCount
        {
            try fold()
        }
        try rotateIfDue(now: now, windowMilliseconds: receipt.dedupWindowMilliseconds)
        let generation = Int(pending?.current ?? current)
        let tenantBytes = receipt.tenant.map { Array($0.utf8) } ?? []
        let tenant = unfolded.number(of: tenantBytes)
        var list = sorted?.list ?? ReceivedIDList()
        if sorted == nil {
            Self.forEachRemembered(in: runs, receipt: receipt) { id, index, _ in list.append(id, index: index) }
        }
        list.sort()
        let entries = list.entries
        var bucketKey = BucketKey(tenant: tenantBytes)
        let hashes =
            sorted?.hashes
            ?? entries.map { entry in bucketKey.withBytes(of: entry.id) { ReceivedIDFilter.hashes($0) } }
        var key: [UInt8] = []
        var members: [UInt8] = []
        var memberContents: [UInt8] = []
        var pendingIDs: [UInt8] = []
        var pendingContents: [UInt8] = []
        let insert = insertGroup[generation]
        var bucketStarts: [Int] = []
        var start = 0
        while start < entries.count {
            var end = start + 1
            while end < entries.count, entries[end].id.isInBucket(of: entries[start].id) { end += 1 }
            defer { start = end }
            // Repeats were left out before: each id is here once.
            if end - start == 1 {
                // Alone in its bucket: pending, folded into its run later.
                let content = UInt32(truncatingIfNeeded: contents[entries[start].index])
                entries[start].id.append(to: &pendingIDs)
                ReceivedIDRun.appendContent(content, to: &pendingContents)
                unfolded.insert(tenant: tenant, id: entries[start].id, content: content, now: now)
                bucketStarts.append(start)
                continue
            }
            // Several (an edge box's counting ObjectIds): a group of its own.
            members.removeAll(keepingCapacity: true)
            memberContents.removeAll(keepingCapacity: true)
            for entry in entries[start..<end] {
                members.append(entry.id.member)
                ReceivedIDRun.appendContent(UInt32(truncatingIfNeeded: contents[entry.index]), to: &memberContents)
            }
            setKey(&key, entries[start].id, tenant: tenantBytes)
            try Self.addGroup(insert, key: key, members: members, contents: memberContents)
            bucketStarts.append(start)
        }
        // In a loop of their own: the filter's cache misses overlap.
        for start in bucketStarts { insertIntoFilter(of: generation, hashes[start]) }
        guard !pendingIDs.isEmpty else { return }
        try tenantBytes.withUnsafeBytes { tenantBytes in
            try pendingIDs.withUnsafeBytes { ids in
                try pendingContents.withUnsafeBytes { idContents in
                    insertPending.bind(1, blob: tenantBytes)
                    insertPending.bind(2, blob: ids)
                    insertPending.bind(3, blob: idContents)
                    try insertPending.run()
                }
            }
        }
    }

    /// Folds the pending ids into the runs of the generation they belong
    /// to (the current one, as the open transaction left it): sorted, each
    /// run read and replaced once. Inside a transaction; memory follows
    /// the file again after a rollback (``didRollBack()``).
    func fold() throws {
        // After a rollback, memory may hold ids the file does not (or lack
        // ones it does): the file's are the ones to fold.
        if unfoldedNeedsReading { try readUnfolded(now: wallClockMilliseconds()) }
        guard !unfolded.isEmpty else { return }
        let generation = Int(pending?.current ?? current)
        var runKey: [UInt8] = []
        var added: [(suffix: UInt64, content: UInt32)] = []
        var merged: (ids: [UInt8], contents: [UInt8]) = ([], [])
        let select = selectRun[generation]
        let replace = replaceRun[generation]
        let tenants = unfolded.tenants
        // Their buckets went into the filter when they came.
        try unfolded.forEachRun { number, entries in
            added.removeAll(keepingCapacity: true)
            for entry in entries { added.append((ReceivedIDRun.suffix(entry.id), entry.content)) }
            ReceivedIDRun.setKey(&runKey, tenant: tenants[Int(number)], id: entries[0].id)
            try runKey.withUnsafeBytes { key in
                select.bind(1, blob: key)
                defer { select.reset() }
                let found = try select.step()
                if found, ReceivedIDRun.damage(key: key, ids: select.blob(0), contents: select.blob(1)) == nil {
                    ReceivedIDRun.merge(ids: select.blob(0), contents: select.blob(1), with: added[...], into: &merged)
                } else {
                    // None, or damaged (`verify` reports it; merging would read
                    // out of bounds): replaced by the new ids, the loss kept.
                    if found { try forgetDamagedMemory() }
                    let none = UnsafeRawBufferPointer(start: nil, count: 0)
                    ReceivedIDRun.merge(ids: none, contents: none, with: added[...], into: &merged)
                }
                select.reset()
                try merged.ids.withUnsafeBytes { ids in
                    try merged.contents.withUnsafeBytes { contents in
                        replace.bind(1, blob: key)
                        replace.bind(2, blob: ids)
                        replace.bind(3, blob: contents)
                        try replace.run()
                    }
                }
            }
        }
        try store.db.execute("DELETE FROM received_pending")
        unfolded.removeAll()
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
        // Keys a rolled-back fold put in a filter stay: a false positive
        // costs a lookup, nothing else. The pending ids are read again.
        pending = nil
        pendingFilter = nil
        unfoldedNeedsReading = true
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
        // The pending ids belong to the generation ending.
        try fold()
        let next = 1 - current
        try store.db.execute("DELETE FROM received_groups_\(next); DELETE FROM received_runs_\(next)")
        // Emptied: complete from here, sized from the generation now ending.
        pendingFilter = ReceivedIDFilter(
            capacity: ReceivedIDFilter.capacity(after: filter(of: Int(current))?.count ?? 0)
        )
        try store.setMeta("received.generation", next)
        try store.setMeta("received.since", now)
        pending = (next, now)
    }

    /// Fills `members` with what the groups hold of the bucket of `id`
    /// under `tenant`: each member's content checksum. In the generations
    /// of `generations` (bit 0 and 1), or nil: those whose filter does not
    /// rule the bucket out.
    private func load(
        _ members: inout BucketMembers,
        bucketOf id: ReceivedID,
        tenant: [UInt8],
        generations: UInt8?
    ) throws {
        members.clear()
        var low: [UInt8] = []
        setKey(&low, id, tenant: tenant)
        low[low.count - 1] &= ~Self.memberBits
        var high = low
        high[high.count - 1] |= Self.memberBits
        try low.withUnsafeBytes { low in
            try high.withUnsafeBytes { high in
                for generation in 0..<2 {
                    if let generations {
                        guard generations & (1 << generation) != 0 else { continue }
                    } else {
                        guard filter(of: generation)?.mightContain(low) ?? true else { continue }
                    }
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

    /// The filter of a generation's runs as the open transaction left it:
    /// after a rotation written in it (by an earlier batch of a group
    /// commit), the emptied generation's is the pending one.
    private func filter(of generation: Int) -> ReceivedIDFilter? {
        if let pending, pending.current != current, generation == Int(pending.current) { return pendingFilter }
        return filters[generation]
    }

    private func insertIntoFilter(of generation: Int, _ hashes: ReceivedIDFilter.Hashes) {
        if let pending, pending.current != current, generation == Int(pending.current) {
            pendingFilter?.insert(hashes: hashes)
        } else {
            filters[generation]?.insert(hashes: hashes)
        }
    }

    /// `key` = the tenant's bytes (none: the bare id), then the 12-byte id.
    private func setKey(_ key: inout [UInt8], _ id: ReceivedID, tenant: [UInt8]) {
        key.removeAll(keepingCapacity: true)
        key.append(contentsOf: tenant)
        id.append(to: &key)
    }

    /// Records that received ids were lost to damage (status says so:
    /// batches received before may be stored again if re-sent).
    private func forgetDamagedMemory() throws {
        try store.setMeta(DurableQueue.gatewayMemoryForgottenKey, wallClockMilliseconds())
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

/// A bucket's key in a filter — the account's name, then an id less its
/// last 7 bits — written in place: taken for every received id.
struct BucketKey {
    private var bytes: [UInt8]
    private let idOffset: Int

    init(tenant: [UInt8]) {
        bytes = tenant + [UInt8](repeating: 0, count: 12)
        idOffset = tenant.count
    }

    /// Calls `body` with the key of the bucket of `id`.
    mutating func withBytes<R>(of id: ReceivedID, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let offset = idOffset
        return bytes.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: id.high.bigEndian, toByteOffset: offset, as: UInt64.self)
            bytes.storeBytes(
                of: (id.low & ~UInt32(ReceivedIDs.memberBits)).bigEndian,
                toByteOffset: offset + 8,
                as: UInt32.self
            )
            return body(UnsafeRawBufferPointer(bytes))
        }
    }
}
