/// Every SQL statement the queue runs, over one connection. Not
/// thread-safe: ``DurableQueue`` calls it under its lock. Policy (bounds,
/// leases, waiting) lives in the queue; this type only reads and writes.
final class QueueStore: @unchecked Sendable {  // used only under a DurableQueue's lock
    let db: SQLiteConnection
    private let insertSegment: SQLiteStatement
    private let deleteSegment: SQLiteStatement
    private let consumeSegment: SQLiteStatement
    private let addCounter: SQLiteStatement
    private let upsertPosition: SQLiteStatement
    private let selectFrom: SQLiteStatement
    private let selectHeads: SQLiteStatement
    private let insertDeadLetter: SQLiteStatement
    private let setBootOffset: SQLiteStatement
    /// Whether this boot's wall-clock offset is in `boots` (written once the
    /// clock is first seen synchronised: ``recordClockOffsetIfSynchronised(now:)``).
    private var bootOffsetRecorded = false
    /// Each boot's wall-clock offset where `boots` knows it, read when first
    /// asked for and again after this store records or copies one.
    private var knownOffsets: [Int64: Int64]?
    /// ``segmentIDs(orderedBy:limit:)``'s order: for which `ORDER BY` and
    /// largest id, every id in it, and how many of them are gone.
    /// Per sink of several (nil: the queue's one).
    private var ordered: [Int?: (sql: String, maxID: Int64, ids: [Int64], next: Int)] = [:]
    /// `SELECT max(id)`, prepared once: asked at every ordered take.
    private var largestID: SQLiteStatement?
    /// Set when the queue was opened with an encryption key: payloads are
    /// sealed on the way in and opened on the way out; nothing else changes.
    var cipher: PayloadCipher?
    /// Whether new segments are stored compressed (``QueueSettings/compression``);
    /// segments of either codec are read whatever it says.
    var compresses = true
    /// The page cache once received ids are in use (``QueueSettings/receivedIDsCacheBytes``).
    var receivedIDsCacheBytes = 16 << 20
    private let segmentCodec = SegmentCodec()
    /// The last compressed segment read, by id and checksum, decompressed:
    /// the uploader takes a segment in several leases.
    /// The last two, most recent last: with two sinks, each reads the
    /// segment the other just read.
    private var decoded: [(id: Int64, checksum: Int64, plain: [UInt8])] = []
    /// Ids and sessions received over HTTP; opened when first needed.
    private var received: ReceivedIDs?
    /// The segments whose checksum matched when last read, by id, with that
    /// checksum: a segment taken in several leases (or taken again after a
    /// linger) is checked once, not once per lease. Bounded: the head of
    /// the queue is all the uploader reads again.
    private var verified: [Int64: Int64] = [:]
    /// Statements prepared once when first run (``cached(_:)``).
    private var statements: [String: SQLiteStatement] = [:]
    /// How new segments are routed to sinks (``SinkTable/storedMask(for:)``).
    var sinkTable = SinkTable()

    /// `sql`, prepared the first time it is asked for and kept: reset it after use.
    func cached(_ sql: String) throws -> SQLiteStatement {
        if let statement = statements[sql] { return statement }
        let statement = try db.prepare(sql)
        statements[sql] = statement
        return statement
    }

    func receivedIDs(now: Int64) throws -> ReceivedIDs {
        if let received { return received }
        let opened = try ReceivedIDs(store: self, now: now)
        received = opened
        return opened
    }

    /// Folds the gateway's pending received ids into their runs, in a
    /// transaction of its own (when the queue closes: they are durable
    /// either way; folded, a restart need not read them back).
    func foldReceivedIDs() throws {
        guard let received else { return }
        do {
            try db.transaction { try received.fold() }
            received.didCommit()
        } catch {
            received.didRollBack()
            throw error
        }
    }

    /// Whether commits fsync (`synchronous=FULL`, durability power_loss_safe).
    let syncsEveryCommit: Bool

    /// Runs `body` — a transaction that a power cut may undo at no cost but
    /// re-sends, such as deleting acknowledged records — with
    /// `synchronous=NORMAL`, then restores `FULL`. Its WAL frames become
    /// durable with the next append's fsync (the log is written in order),
    /// and one lost to a power cut re-sends those records under the same
    /// `_id`s, as a crash between the upload and the delete does. Saves one
    /// fsync per uploaded batch.
    func withoutSync<R>(_ body: () throws -> R) throws -> R {
        guard syncsEveryCommit else { return try body() }
        try db.execute("PRAGMA synchronous = NORMAL")
        let result: R
        do {
            result = try body()
        } catch {
            try db.execute("PRAGMA synchronous = FULL")
            throw error
        }
        try db.execute("PRAGMA synchronous = FULL")
        return result
    }

    /// Brings the database to the current format and prepares statements.
    /// `readOnly`: a connection for inspection; the file is not switched to
    /// WAL or migrated (it must be in the current format already).
    init(db: SQLiteConnection, isFile: Bool, durability: Durability, readOnly: Bool = false) throws {
        self.db = db
        syncsEveryCommit = isFile && durability == .powerLossSafe
        try QueueStore.configure(db, isFile: isFile && !readOnly, durability: durability)
        if readOnly {
            guard try db.integer("PRAGMA user_version") == QueueFormat.currentVersion else {
                throw EdgeIngestError(
                    .queueUnavailable,
                    "The queue '\(db.displayName)' is in an older format: start the agent once (it converts the file) before inspecting it."
                )
            }
        } else {
            try QueueStore.migrate(db)
        }
        try QueueSchemaCheck.check(db)
        insertSegment = try db.prepare(
            // ?9, the id: NULL for a new segment (the next id), or the id of
            // the segment a migration replaces in place (order kept).
            "INSERT OR REPLACE INTO segments(id, type, schema_version, enqueued_at, record_count, payload_bytes, ids, payload, codec, checksum, boot, accepted_boottime, clock, sinks) VALUES(?9, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?10, ?8, ?11, ?12, ?13, ?14)"
        )
        setBootOffset = try db.prepare(
            "UPDATE boots SET offset_ms = ?2, synchronised_at = ?3 WHERE boot = ?1 AND offset_ms IS NULL"
        )
        deleteSegment = try db.prepare("DELETE FROM segments WHERE id = ?1")
        consumeSegment = try db.prepare("UPDATE segments SET consumed = ?2, consumed_bytes = ?3 WHERE id = ?1")
        addCounter = try db.prepare(
            "INSERT INTO counters(name, value) VALUES(?1, ?2) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value"
        )
        upsertPosition = try db.prepare(
            "INSERT INTO positions(source, position, updated_at) VALUES(?1, ?2, ?3) ON CONFLICT(source) DO UPDATE SET position = excluded.position, updated_at = excluded.updated_at"
        )
        selectFrom = try db.prepare(
            "SELECT id, type, schema_version, enqueued_at, record_count, consumed, consumed_bytes, ids, payload, payload_bytes, codec, checksum, boot, accepted_boottime, clock FROM segments WHERE id >= ?1 ORDER BY id"
        )
        insertDeadLetter = try db.prepare(
            "INSERT INTO dead_letters(record_id, type, schema_version, enqueued_at, failed_at, reason, payload, checksum, sink) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
        )
        selectHeads = try db.prepare(
            "SELECT id, record_count - consumed, payload_bytes - consumed_bytes, type FROM segments WHERE id > ?1 ORDER BY id"
        )
        if !readOnly { try recordBoot(now: wallClockMilliseconds()) }
    }

    private static func configure(_ db: SQLiteConnection, isFile: Bool, durability: Durability) throws {
        // Reading the header first turns "not a database" into a clear error
        // before anything could write to the file.
        let applicationID = try db.integer("PRAGMA application_id")
        let tables = try db.integer("SELECT count(*) FROM sqlite_master")
        if tables > 0 && applicationID != QueueFormat.applicationID {
            throw EdgeIngestError(
                .queueCorrupt,
                "'\(db.displayName)' is an SQLite database but not an EdgeIngest queue (application_id \(applicationID)). It was left untouched: point the queue at another file."
            )
        }
        let version = try db.integer("PRAGMA user_version")
        if version > QueueFormat.currentVersion {
            throw EdgeIngestError(
                .queueFormatTooNew,
                "The queue '\(db.displayName)' has format \(version), newer than this EdgeIngest understands (\(QueueFormat.currentVersion)). Upgrade ingestd, or drain the queue with the newer version first."
            )
        }
        if isFile {
            let mode = try db.prepare("PRAGMA journal_mode = WAL")
            _ = try mode.step()
            guard mode.string(0).lowercased() == "wal" else {
                throw EdgeIngestError(
                    .queueUnavailable,
                    "The queue '\(db.displayName)' could not switch to WAL mode (got \(mode.string(0))): is the file system read-only or a network mount?"
                )
            }
            let synchronous = durability == .powerLossSafe ? "FULL" : "NORMAL"
            try db.execute("PRAGMA synchronous = \(synchronous); PRAGMA journal_size_limit = 8388608")
        }
        // secure_delete: Debian builds SQLite with it on, which zero-fills every
        // acknowledged segment's pages — writing each reading a second time.
        // FAST zeroes only where it costs no extra I/O (docs/QUEUE.md).
        // cache_size: the queue appends at the tail and reads the head once;
        // SQLite's default 2 MiB page cache only held pages never read again
        // (a smaller cache lowered peak RSS at no CPU cost: docs/BENCHMARKS.md).
        try db.execute("PRAGMA foreign_keys = OFF; PRAGMA secure_delete = FAST; PRAGMA cache_size = -256")
    }

    private static func migrate(_ db: SQLiteConnection) throws {
        let version = try db.integer("PRAGMA user_version")
        guard version < QueueFormat.currentVersion else { return }
        // A format number lower than the tables say (a flipped bit, a zeroed
        // header): migrating would fail half-way ("table … already exists").
        // It is damage, which `ingestd repair` (and `run`) rebuild by the
        // format the tables have.
        let hasTables = try db.integer("SELECT count(*) FROM sqlite_master") > 0
        if hasTables, let tables = QueueSchemaCheck.inferredVersion(of: db), tables > version {
            throw EdgeIngestError(
                .queueCorrupt,
                "The queue file '\(db.displayName)' is damaged: its header says format \(version), but its tables are format \(tables)'s. Stop the agent and run `ingestd repair` (it keeps a copy and puts the header back)."
            )
        }
        try db.transaction {
            for step in Int(version)..<QueueFormat.migrations.count {
                try db.execute(QueueFormat.migrations[step])
            }
            try db.execute(
                "PRAGMA application_id = \(QueueFormat.applicationID); PRAGMA user_version = \(QueueFormat.currentVersion)"
            )
        }
    }

    // MARK: Reads

    struct Totals {
        var records: Int64 = 0
        var bytes: Int64 = 0
        var oldestEnqueuedAt: Int64?
    }

    func totals() throws -> Totals {
        let stmt = try db.prepare(
            "SELECT count(*), coalesce(sum(record_count - consumed), 0), coalesce(sum(payload_bytes - consumed_bytes), 0), min(enqueued_at) FROM segments"
        )
        guard try stmt.step() else { return Totals() }
        return Totals(
            records: stmt.int64(1),
            bytes: stmt.int64(2),
            oldestEnqueuedAt: stmt.isNull(3) ? nil : stmt.int64(3)
        )
    }

    /// The oldest segment's append time and acceptance, or nil when empty.
    func head() throws -> (enqueuedAt: Int64, acceptance: Acceptance?)? {
        let stmt = try db.prepare(
            "SELECT enqueued_at, boot, accepted_boottime, clock FROM segments ORDER BY id LIMIT 1"
        )
        guard try stmt.step() else { return nil }
        return (stmt.int64(0), stmt.acceptance(at: 1))
    }

    func oldestEnqueuedAt() throws -> Int64? {
        let stmt = try db.prepare("SELECT enqueued_at FROM segments ORDER BY id LIMIT 1")
        return try stmt.step() ? stmt.int64(0) : nil
    }

    func counters() throws -> [String: Int64] {
        let stmt = try db.prepare("SELECT name, value FROM counters")
        var out: [String: Int64] = [:]
        while try stmt.step() { out[stmt.string(0)] = stmt.int64(1) }
        return out
    }

    func positions() throws -> [String: String] {
        let stmt = try db.prepare("SELECT source, position FROM positions")
        var out: [String: String] = [:]
        while try stmt.step() { out[stmt.string(0)] = stmt.string(1) }
        return out
    }

    func meta(_ key: String) throws -> Int64? {
        let stmt = try db.prepare("SELECT value FROM meta WHERE key = ?1")
        stmt.bind(1, key)
        return try stmt.step() ? stmt.int64(0) : nil
    }

    func setMeta(_ key: String, _ value: Int64) throws {
        let stmt = try db.prepare(
            "INSERT INTO meta(key, value) VALUES(?1, ?2) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
        )
        stmt.bind(1, key)
        stmt.bind(2, value)
        try stmt.run()
    }

    /// Segments with id > `after`, oldest first, with their unconsumed
    /// records and bytes.
    func segmentSizes(after: Int64) throws -> [OverflowPlan.StoredSegment] {
        defer { selectHeads.reset() }
        selectHeads.bind(1, after)
        var out: [OverflowPlan.StoredSegment] = []
        while try selectHeads.step() {
            out.append(
                .init(
                    id: selectHeads.int64(0),
                    records: selectHeads.int64(1),
                    bytes: selectHeads.int64(2),
                    type: selectHeads.string(3)
                )
            )
        }
        return out
    }

    /// The ids of the next `limit` segments in the order `orderBy` (an SQL
    /// `ORDER BY` over `segments`, from ``QueueConfiguration/segmentOrderSQL``).
    ///
    /// The whole order is computed once and kept until a segment is added
    /// (the largest id changes): a backlog of n segments drains in n/limit
    /// takes, and sorting it at each take cost O(n²) row visits, growing
    /// with the backlog. Ids deleted since are still listed: the caller passes
    /// over them and reports them with ``forgetOrderedSegments(_:)``.
    /// With `sink` (one of several), only the segments routed to it.
    func segmentIDs(orderedBy orderBy: String, limit: Int, sink: Int? = nil) throws -> [Int64] {
        if largestID == nil { largestID = try db.prepare("SELECT max(id) FROM segments") }
        let largest = largestID!
        defer { largest.reset() }
        let maxID = try largest.step() && !largest.isNull(0) ? largest.int64(0) : 0
        if ordered[sink]?.sql != orderBy || ordered[sink]?.maxID != maxID {
            let routed = sink.map { "WHERE (coalesce(sinks, 1) & \(SinkTable.bit($0))) != 0 " } ?? ""
            let select = try db.prepare("SELECT id FROM segments \(routed)ORDER BY \(orderBy)")
            var ids: [Int64] = []
            while try select.step() { ids.append(select.int64(0)) }
            ordered[sink] = (orderBy, maxID, ids, 0)
        }
        guard let order = ordered[sink] else { return [] }
        return Array(order.ids[order.next..<min(order.ids.count, order.next + limit)])
    }

    /// Passes over the first `count` ids ``segmentIDs(orderedBy:limit:sink:)``
    /// returned last: their segments are gone (for that sink).
    func forgetOrderedSegments(_ count: Int, sink: Int? = nil) {
        guard count > 0, var order = ordered[sink] else { return }
        order.next = min(order.ids.count, order.next + count)
        ordered[sink] = order
    }

    /// What the queue needs of each segment of `types` to age it: its
    /// acceptance, and the records and bytes it still holds.
    func segmentAges(
        types: [String]
    ) throws -> [(id: Int64, type: String, enqueuedAt: Int64, acceptance: Acceptance?, records: Int64, bytes: Int64)] {
        let list = types.map(sqlStringLiteral).joined(separator: ", ")
        let select = try db.prepare(
            """
            SELECT id, type, enqueued_at, boot, accepted_boottime, clock, record_count - consumed,
                payload_bytes - consumed_bytes FROM segments WHERE type IN (\(list)) ORDER BY id
            """
        )
        var out: [(id: Int64, type: String, enqueuedAt: Int64, acceptance: Acceptance?, records: Int64, bytes: Int64)] =
            []
        while try select.step() {
            out.append(
                (
                    select.int64(0), select.string(1), select.int64(2), select.acceptance(at: 3), select.int64(6),
                    select.int64(7)
                )
            )
        }
        return out
    }

    /// The type and ids of the newest segments, newest first, until
    /// `limit` ids (for ``DurableQueue/recentIDs()``). Ids are stored in
    /// the clear (encryption seals payloads only), so no key is needed.
    func newestIDs(limit: Int) throws -> [(type: String, ids: [UInt8])] {
        let select = try db.prepare("SELECT type, ids FROM segments ORDER BY id DESC")
        var out: [(type: String, ids: [UInt8])] = []
        var taken = 0
        while taken < limit, try select.step() {
            let ids = select.blob(1)
            out.append((select.string(0), Array(ids)))
            taken += ids.count / 12
        }
        return out
    }

    /// One stored segment as the reader sees it; buffers valid only inside the callback.
    struct SegmentRow {
        var id: Int64
        var type: String
        var schemaVersion: Int64
        var enqueuedAt: Int64
        var recordCount: Int64
        var consumed: Int64
        var consumedBytes: Int64
        var ids: UnsafeRawBufferPointer
        /// The records' JSON lines (opened when the queue is encrypted).
        var payload: UnsafeRawBufferPointer
        /// What is wrong with the row, if anything: a row with damage must
        /// not be sent, copied or rewritten (``QueueStore/quarantine(segment:problem:at:)``).
        var damage: String?
        /// Whether the row carries a checksum (written by format 3 or later).
        var hasChecksum = true
        /// When and in which boot it was accepted (nil: before format 4).
        var acceptance: Acceptance?
        /// Records the row still holds (its declared count less the consumed prefix).
        var pendingRecords: Int64 { max(0, recordCount - consumed) }
    }

    /// ``scanSegments(from:sink:skip:_:)``'s rows for one sink of several.
    static let selectForSink = """
        SELECT s.id, s.type, s.schema_version, s.enqueued_at, s.record_count, coalesce(p.consumed, s.consumed),
            coalesce(p.consumed_bytes, s.consumed_bytes), s.ids, s.payload, s.payload_bytes, s.codec, s.checksum,
            s.boot, s.accepted_boottime, s.clock
        FROM segments s LEFT JOIN sink_progress p ON p.sink = ?2 AND p.segment = s.id
        WHERE s.id >= ?1 AND (coalesce(s.sinks, 1) & ?3) != 0 ORDER BY s.id
        """

    /// Calls `body` for segments from the head on, until it returns false.
    /// Each row is checked first (docs/QUEUE.md "Integrity"): its checksum,
    /// then its structure; a damaged row comes with ``SegmentRow/damage``
    /// set and its buffers as stored.
    ///
    /// - Throws: ``EdgeIngestError/Code/queueFormatTooNew`` for a row stored
    ///   with a codec this version does not know (written by a newer one).
    ///   - skip: rows for which it returns true (given the id, type, append
    ///     time and acceptance) are passed over before anything else of them is
    ///     read, checked or opened.
    ///   - sink: only the segments routed to this sink (of several), each
    ///     with `consumed` and `consumedBytes` at that sink's cursor; nil:
    ///     every segment at its common prefix.
    func scanSegments(
        from id: Int64 = 0,
        sink: Int? = nil,
        skip: ((Int64, String, Int64, Acceptance?) -> Bool)? = nil,
        _ body: (SegmentRow) throws -> Bool
    ) throws {
        let selectFrom = try sink.map { _ in try cached(Self.selectForSink) } ?? self.selectFrom
        defer { selectFrom.reset() }
        selectFrom.bind(1, id)
        if let sink {
            selectFrom.bind(2, Int64(sink))
            selectFrom.bind(3, SinkTable.bit(sink))
        }
        while try selectFrom.step() {
            let acceptance = selectFrom.acceptance(at: 12)
            if let skip, skip(selectFrom.int64(0), selectFrom.string(1), selectFrom.int64(3), acceptance) { continue }
            var row = SegmentRow(
                id: selectFrom.int64(0),
                type: selectFrom.string(1),
                schemaVersion: selectFrom.int64(2),
                enqueuedAt: selectFrom.int64(3),
                recordCount: selectFrom.int64(4),
                consumed: selectFrom.int64(5),
                consumedBytes: selectFrom.int64(6),
                ids: selectFrom.blob(7),
                payload: selectFrom.blob(8)
            )
            let payloadBytes = selectFrom.int64(9)
            let codec = selectFrom.int64(10)
            let checksum = selectFrom.isNull(11) ? nil : selectFrom.int64(11)
            row.hasChecksum = checksum != nil
            row.acceptance = acceptance
            if let checksum, verified[row.id] != checksum {
                let computed = SegmentChecksum.of(
                    type: row.type,
                    schemaVersion: row.schemaVersion,
                    enqueuedAt: row.enqueuedAt,
                    recordCount: row.recordCount,
                    payloadBytes: payloadBytes,
                    codec: codec,
                    acceptance: row.acceptance,
                    ids: row.ids,
                    payload: row.payload
                )
                if computed != checksum {
                    row.damage = "its checksum does not match its contents (stored \(checksum), computed \(computed))"
                    guard try body(row) else { return }
                    continue
                }
                if verified.count >= 64 { verified.removeAll(keepingCapacity: true) }
                verified[row.id] = checksum
            }
            // Every writer of a codec but 0 also writes a checksum, and codecs
            // are small numbers: anything else is a damaged row, not a newer one.
            if codec != SegmentCodec.plain, checksum == nil || codec < 0 || codec > 255 {
                row.damage =
                    checksum == nil
                    ? "its codec is \(codec) but it has no checksum (a row without one is never compressed)"
                    : "its codec \(codec) is not one any version writes"
                guard try body(row) else { return }
                continue
            }
            guard codec == SegmentCodec.plain || codec == SegmentCodec.zstd else {
                throw EdgeIngestError(
                    .queueFormatTooNew,
                    "Segment \(row.id) of the queue '\(db.displayName)' is stored with codec \(codec), which this version of EdgeIngest cannot read. Upgrade ingestd, or drain the queue with the version that wrote it."
                )
            }
            if cipher == nil, codec == SegmentCodec.plain {
                row.damage = QueueStore.structuralDamage(row, payloadBytes: payloadBytes, checksummed: checksum != nil)
                guard try body(row) else { return }
                continue
            }
            let plain: [UInt8]
            switch opened(row, codec: codec, payloadBytes: payloadBytes, checksum: checksum) {
            case .success(let bytes): plain = bytes
            case .failure(let damage):
                row.damage = damage.message
                guard try body(row) else { return }
                continue
            }
            let more = try plain.withUnsafeBytes { bytes -> Bool in
                var open = row
                open.payload = bytes
                open.damage = QueueStore.structuralDamage(
                    open,
                    payloadBytes: payloadBytes,
                    checksummed: checksum != nil
                )
                return try body(open)
            }
            guard more else { return }
        }
    }

    /// A row's JSON lines from its stored payload: opened with the cipher
    /// (if any), then decompressed (codec 1), or what is wrong with it.
    private func opened(
        _ row: SegmentRow,
        codec: Int64,
        payloadBytes: Int64,
        checksum: Int64?
    ) -> Result<[UInt8], SegmentCodec.Damage> {
        if codec == SegmentCodec.zstd, let checksum,
            let hit = decoded.last(where: { $0.id == row.id && $0.checksum == checksum })
        {
            return .success(hit.plain)
        }
        var unsealed: [UInt8]?
        if let cipher {
            do {
                unsealed = try cipher.open(row.payload, what: "Segment \(row.id)")
            } catch let error as EdgeIngestError {
                return .failure(.init(message: error.message))
            } catch {
                return .failure(.init(message: "\(error)"))
            }
        }
        guard codec == SegmentCodec.zstd else { return .success(unsealed ?? Array(row.payload)) }
        let result =
            unsealed.map { opened in opened.withUnsafeBytes { segmentCodec.decode($0, plainBytes: payloadBytes) } }
            ?? segmentCodec.decode(row.payload, plainBytes: payloadBytes)
        if let checksum, case .success(let plain) = result {
            if decoded.count >= (sinkTable.isSingle ? 1 : 2) { decoded.removeFirst() }
            decoded.append((row.id, checksum, plain))
        }
        return result
    }

    /// Invariant 3 on an opened row: ids for every record, a consumed
    /// prefix that ends on a record boundary and holds `consumed` records,
    /// and — for a row without a checksum (written before format 3) — one
    /// newline-terminated line per record.
    static func structuralDamage(_ row: SegmentRow, payloadBytes: Int64, checksummed: Bool) -> String? {
        guard row.recordCount > 0, row.ids.count == Int(row.recordCount) * 12 else {
            return "it has \(row.ids.count) bytes of ids for \(row.recordCount) records"
        }
        guard row.payload.count == Int(payloadBytes) else {
            return "its payload is \(row.payload.count) bytes, not the \(payloadBytes) it declares"
        }
        guard row.consumed >= 0, row.consumed < row.recordCount, row.consumedBytes >= 0,
            row.consumedBytes <= Int64(row.payload.count)
        else {
            return "its acknowledged prefix (\(row.consumed) records, \(row.consumedBytes) bytes) is out of range"
        }
        if row.consumed > 0 {
            let prefix = UnsafeRawBufferPointer(rebasing: row.payload[..<Int(row.consumedBytes)])
            guard prefix.last == UInt8(ascii: "\n"), forEachLine(in: prefix, { _, _ in true }) == Int(row.consumed)
            else {
                return
                    "its acknowledged prefix (\(row.consumed) records, \(row.consumedBytes) bytes) does not end on a record"
            }
        }
        if !checksummed {
            guard row.payload.last == UInt8(ascii: "\n"),
                forEachLine(in: row.payload, { _, _ in true }) == Int(row.recordCount)
            else {
                return "its payload does not hold the \(row.recordCount) records it declares"
            }
        }
        return nil
    }

    // MARK: Writes (call inside a transaction)

    ///   - sinks: `segments.sinks` to store; nil: by the run's type (``sinkTable``).
    func insert(_ run: EncodedBatch.Run, schemaVersion: Int64, enqueuedAt: Int64, sinks: Int64?? = nil) throws {
        let acceptance = Acceptance.now()
        try run.ids.withUnsafeBytes { ids in
            try run.payload.withUnsafeBytes { payload in
                try insertSegment(
                    type: run.typeName,
                    schemaVersion: schemaVersion,
                    enqueuedAt: enqueuedAt,
                    records: Int64(run.count),
                    acceptance: acceptance,
                    sinks: sinks ?? sinkTable.storedMask(for: run.typeName),
                    ids: ids,
                    payload: payload
                )
            }
        }
    }

    /// This boot's row in `boots`, in its own statement (not in an append's
    /// transaction, so no rollback can take it): when the store opens for
    /// writing.
    private func recordBoot(now: Int64) throws {
        let insert = try db.prepare(
            "INSERT INTO boots(boot, boot_id, first_seen_at) VALUES(?1, ?2, ?3) ON CONFLICT(boot) DO NOTHING"
        )
        insert.bind(1, BootIdentity.current.key)
        try BootIdentity.current.bytes.withUnsafeBytes { insert.bind(2, blob: $0) }
        insert.bind(3, now)
        try insert.run()
    }

    /// The first time the wall clock is seen synchronised in this boot, its
    /// offset from the boot-time clock (wall = `accepted_boottime` + offset)
    /// goes into `boots`, in its own statement: call it outside a
    /// transaction (before an append's). Cheap after that: one flag.
    func recordClockOffsetIfSynchronised(now: Int64) throws {
        guard !bootOffsetRecorded, ClockSynchronisation.state() == 1 else { return }
        defer { setBootOffset.reset() }
        setBootOffset.bind(1, BootIdentity.current.key)
        setBootOffset.bind(2, now - bootTimeMilliseconds())
        setBootOffset.bind(3, now)
        try setBootOffset.step()
        bootOffsetRecorded = true
        knownOffsets = nil
    }

    /// Each boot's offset from its boot-time clock to the wall clock
    /// (`boots.offset_ms`), for the boots that have one.
    func bootOffsets() throws -> [Int64: Int64] {
        if let knownOffsets { return knownOffsets }
        let rows = try db.prepare("SELECT boot, offset_ms FROM boots WHERE offset_ms IS NOT NULL")
        var offsets: [Int64: Int64] = [:]
        while try rows.step() { offsets[rows.int64(0)] = rows.int64(1) }
        knownOffsets = offsets
        return offsets
    }

    /// Copies `source`'s `boots` rows that this file lacks (an offset it
    /// knows fills one this file does not): copied segments keep their
    /// boot, and its row with them.
    func copyBoots(from source: QueueStore) throws {
        let rows = try source.db.prepare("SELECT boot, boot_id, first_seen_at, offset_ms, synchronised_at FROM boots")
        let insert = try db.prepare(
            """
            INSERT INTO boots(boot, boot_id, first_seen_at, offset_ms, synchronised_at) VALUES(?1, ?2, ?3, ?4, ?5)
            ON CONFLICT(boot) DO UPDATE SET offset_ms = coalesce(offset_ms, excluded.offset_ms),
                synchronised_at = coalesce(synchronised_at, excluded.synchronised_at)
            """
        )
        while try rows.step() {
            insert.bind(1, rows.int64(0))
            insert.bind(2, blob: rows.blob(1))
            insert.bind(3, rows.int64(2))
            if !rows.isNull(3) { insert.bind(4, rows.int64(3)) }
            if !rows.isNull(4) { insert.bind(5, rows.int64(4)) }
            try insert.run()
        }
        knownOffsets = nil
    }

    /// Inserts one segment — or replaces segment `id` — sealing the payload
    /// (if encrypted) and storing it with its checksum over the stored
    /// bytes: the one place a segment row is written.
    private func insertSegment(
        replacing id: Int64? = nil,
        type: String,
        schemaVersion: Int64,
        enqueuedAt: Int64,
        records: Int64,
        acceptance: Acceptance?,
        sinks: Int64?,
        ids: UnsafeRawBufferPointer,
        payload: UnsafeRawBufferPointer
    ) throws {
        defer { insertSegment.reset() }
        if let id { insertSegment.bind(9, id) }
        if let sinks { insertSegment.bind(14, sinks) }
        if let acceptance {
            insertSegment.bind(11, acceptance.boot)
            insertSegment.bind(12, acceptance.boottime)
            if let clock = acceptance.clock { insertSegment.bind(13, clock) }
        }
        insertSegment.bind(1, type)
        insertSegment.bind(2, schemaVersion)
        insertSegment.bind(3, enqueuedAt)
        insertSegment.bind(4, records)
        insertSegment.bind(5, Int64(payload.count))
        try encoded(payload) { encoded, codec in
            try sealed(encoded) { stored in
                insertSegment.bind(6, blob: ids)
                insertSegment.bind(7, blob: stored)
                insertSegment.bind(10, codec)
                insertSegment.bind(
                    8,
                    SegmentChecksum.of(
                        type: type,
                        schemaVersion: schemaVersion,
                        enqueuedAt: enqueuedAt,
                        recordCount: records,
                        payloadBytes: Int64(payload.count),
                        codec: codec,
                        acceptance: acceptance,
                        ids: ids,
                        payload: stored
                    )
                )
                try insertSegment.step()
            }
        }
        if id != nil { decoded = [] }
    }

    /// Calls `body` with `payload` as it is encoded — compressed when the
    /// queue compresses and that makes it smaller — and its codec.
    private func encoded(
        _ payload: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer, Int64) throws -> Void
    ) throws {
        guard compresses else { return try body(payload, SegmentCodec.plain) }
        try segmentCodec.encode(payload, body)
    }

    /// Calls `body` with `payload` as it is stored: sealed with the cipher, if any.
    private func sealed(_ payload: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard let cipher else { return try body(payload) }
        try cipher.seal(payload).withUnsafeBytes { try body($0) }
    }

    /// A dead letter's payload as stored → its record JSON.
    func openDeadLetterPayload(_ stored: UnsafeRawBufferPointer, number: Int64) throws -> [UInt8] {
        guard let cipher else { return Array(stored) }
        return try cipher.open(stored, what: "Dead letter #\(number)")
    }

    /// Inserts a segment copied from another queue as it is (ids, payload,
    /// schema version and enqueue time kept).
    func insertCopy(
        of row: SegmentRow,
        ids: UnsafeRawBufferPointer,
        payload: UnsafeRawBufferPointer,
        records: Int64
    ) throws {
        try insertSegment(
            type: row.type,
            schemaVersion: row.schemaVersion,
            enqueuedAt: row.enqueuedAt,
            records: records,
            acceptance: row.acceptance,
            sinks: sinkTable.storedMask(for: row.type),
            ids: ids,
            payload: payload
        )
    }

    /// Replaces a segment's pending records in place (a schema migration):
    /// same id and enqueue time, so the order is kept; nothing consumed.
    func rewrite(
        segment id: Int64,
        type: String,
        enqueuedAt: Int64,
        acceptance: Acceptance?,
        schemaVersion: Int64,
        records: Int64,
        ids: [UInt8],
        payload: [UInt8]
    ) throws {
        // Its routing is kept; sinks that were ahead in it start again at
        // its first pending record (the offsets changed): a re-send under
        // the same `_id`s.
        let routing = try segmentCursor(id)?.storedMask
        try deleteProgress(segment: id)
        try ids.withUnsafeBytes { idBytes in
            try payload.withUnsafeBytes { payloadBytes in
                try insertSegment(
                    replacing: id,
                    type: type,
                    schemaVersion: schemaVersion,
                    enqueuedAt: enqueuedAt,
                    records: records,
                    acceptance: acceptance,
                    sinks: routing,
                    ids: idBytes,
                    payload: payloadBytes
                )
            }
        }
    }

    /// Moves a damaged segment, whole and as stored, into the quarantine
    /// table and counts its pending records in `quarantined_total`, in one
    /// transaction. Returns the records and bytes it held.
    @discardableResult
    func quarantine(segment id: Int64, problem: String, at now: Int64) throws -> (records: Int64, bytes: Int64) {
        try db.transactionIfNeeded {
            let held = try db.prepare(
                "SELECT max(record_count - consumed, 0), max(payload_bytes - consumed_bytes, 0) FROM segments WHERE id = ?1"
            )
            held.bind(1, id)
            guard try held.step() else { return (0, 0) }
            let records = held.int64(0)
            let bytes = held.int64(1)
            let move = try db.prepare(
                """
                INSERT INTO quarantine(origin, type, schema_version, enqueued_at, record_count, found_at, problem, ids, payload,
                    boot, accepted_boottime, clock, sinks)
                SELECT 'segment ' || id, type, schema_version, enqueued_at, ?2, ?3,
                    ?4 || CASE WHEN codec = 0 THEN '' ELSE ' (payload kept as stored, codec ' || codec || ')' END,
                    ids, payload, boot, accepted_boottime, clock, sinks FROM segments WHERE id = ?1
                """
            )
            move.bind(1, id)
            move.bind(2, records)
            move.bind(3, now)
            move.bind(4, problem)
            try move.run()
            try delete(segment: id)
            try add(counter: "quarantined_total", records)
            return (records, bytes)
        }
    }

    func delete(segment id: Int64) throws {
        deleteSegment.bind(1, id)
        try deleteSegment.run()
    }

    func consume(segment id: Int64, records: Int64, bytes: Int64) throws {
        consumeSegment.bind(1, id)
        consumeSegment.bind(2, records)
        consumeSegment.bind(3, bytes)
        try consumeSegment.run()
    }

    func insertDeadLetter(
        id: ObjectId,
        type: String,
        schemaVersion: Int64,
        enqueuedAt: Int64,
        failedAt: Int64,
        reason: String,
        payload: ArraySlice<UInt8>,
        sink: Int? = nil
    ) throws {
        defer { insertDeadLetter.reset() }
        if let sink, sink != 0 { insertDeadLetter.bind(9, Int64(sink)) }
        var raw: [UInt8] = []
        id.appendBytes(to: &raw)
        try raw.withUnsafeBytes { idBytes in
            try payload.withUnsafeBytes { payloadBytes in
                insertDeadLetter.bind(1, blob: idBytes)
                insertDeadLetter.bind(2, type)
                insertDeadLetter.bind(3, schemaVersion)
                insertDeadLetter.bind(4, enqueuedAt)
                insertDeadLetter.bind(5, failedAt)
                insertDeadLetter.bind(6, reason)
                try sealed(payloadBytes) { stored in
                    insertDeadLetter.bind(7, blob: stored)
                    insertDeadLetter.bind(
                        8,
                        SegmentChecksum.ofDeadLetter(
                            recordID: idBytes,
                            type: type,
                            schemaVersion: schemaVersion,
                            enqueuedAt: enqueuedAt,
                            reason: reason,
                            payload: stored
                        )
                    )
                    try insertDeadLetter.step()
                }
            }
        }
    }

    /// Calls `body` with each dead letter's number and what is wrong with
    /// it (nil when its checksum matches, or it has none: written before
    /// format 3).
    func scanDeadLetters(_ body: (Int64, String?) throws -> Void) throws {
        let stmt = try db.prepare(
            "SELECT id, record_id, type, schema_version, enqueued_at, reason, payload, checksum FROM dead_letters ORDER BY id"
        )
        while try stmt.step() {
            body: do {
                guard !stmt.isNull(7) else { break body }
                let recordID = stmt.blob(1)
                guard recordID.count == 12 else {
                    try body(stmt.int64(0), "its _id is \(recordID.count) bytes, not 12")
                    continue
                }
                let computed = SegmentChecksum.ofDeadLetter(
                    recordID: recordID,
                    type: stmt.string(2),
                    schemaVersion: stmt.int64(3),
                    enqueuedAt: stmt.int64(4),
                    reason: stmt.string(5),
                    payload: stmt.blob(6)
                )
                if computed != stmt.int64(7) {
                    try body(
                        stmt.int64(0),
                        "its checksum does not match its contents (stored \(stmt.int64(7)), computed \(computed))"
                    )
                    continue
                }
            }
            try body(stmt.int64(0), nil)
        }
    }

    /// Moves a damaged dead letter into the quarantine table. In a file that
    /// has had several sinks its record was counted by its last sink (maybe
    /// delivered), so it is counted as a quarantined arrival instead of a
    /// dead letter undone.
    func quarantine(deadLetter number: Int64, problem: String, at now: Int64) throws {
        try db.transactionIfNeeded {
            let move = try db.prepare(
                """
                INSERT INTO quarantine(origin, type, schema_version, enqueued_at, record_count, found_at, problem, ids, payload)
                SELECT 'dead letter ' || id, type, schema_version, enqueued_at, 1, ?2, ?3, record_id, payload FROM dead_letters WHERE id = ?1
                """
            )
            move.bind(1, number)
            move.bind(2, now)
            move.bind(3, problem)
            try move.run()
            guard db.changes == 1 else { return }
            let delete = try db.prepare("DELETE FROM dead_letters WHERE id = ?1")
            delete.bind(1, number)
            try delete.run()
            if sinkTable.everSeveral {
                try add(counter: "appended_total", 1)
            } else {
                try add(counter: "dead_lettered_total", -1)
            }
            try add(counter: "quarantined_total", 1)
        }
    }

    func deadLetterCount() throws -> Int64 {
        try db.integer("SELECT count(*) FROM dead_letters")
    }

    func add(counter name: String, _ delta: Int64) throws {
        guard delta != 0 else { return }
        addCounter.bind(1, name)
        addCounter.bind(2, delta)
        try addCounter.run()
    }

    func set(position: SourcePosition, at time: Int64) throws {
        upsertPosition.bind(1, position.source)
        upsertPosition.bind(2, position.position)
        upsertPosition.bind(3, time)
        try upsertPosition.run()
    }

    // MARK: Space

    struct PageUsage {
        var totalBytes: Int64
        var freeBytes: Int64
    }

    func pageUsage() throws -> PageUsage {
        let pageSize = try db.integer("PRAGMA page_size")
        let pages = try db.integer("PRAGMA page_count")
        let free = try db.integer("PRAGMA freelist_count")
        return PageUsage(totalBytes: pages * pageSize, freeBytes: free * pageSize)
    }

    /// Rewrites the file with only its live pages and gives the space back
    /// now: `VACUUM` writes the new file into the WAL, and the checkpoint
    /// copies it home and truncates both files (without it the file keeps
    /// its size until a later checkpoint).
    func compactFile() throws {
        try db.execute("VACUUM")
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }

    /// Returns free pages to the file system when that is cheap.
    ///
    /// A FIFO frees pages at the front of the file. SQLite's incremental
    /// vacuum took ~700 ms to return 34,000 free pages here (its per-page
    /// freelist work dominates), while `VACUUM`, which copies only the live
    /// pages, took 75 ms (docs/QUEUE.md). So: once at least 1 MiB is free,
    /// the live part is at most 8 MiB (a bounded pause for producers, and
    /// bounded temporary space), and the queue is empty or 95 % of the file
    /// is free, rewrite the file. A steady queue reuses its free pages
    /// instead, and compact-on-launch catches the rest.
    func reclaimFreePages(queueIsEmpty: Bool) throws {
        let free = try db.integer("PRAGMA freelist_count")
        guard free >= 256 else { return }
        let live = try db.integer("PRAGMA page_count") - free
        guard live <= 2048, queueIsEmpty || free >= 19 * live else { return }
        try db.execute("VACUUM")
    }
}

extension SQLiteStatement {
    /// Columns `first`, `first + 1` and `first + 2` of a segment row
    /// (`boot, accepted_boottime, clock`) as its acceptance: nil when
    /// `boot` is NULL (a row written before format 4).
    func acceptance(at first: Int32) -> Acceptance? {
        guard !isNull(first) else { return nil }
        return Acceptance(
            boot: int64(first),
            boottime: int64(first + 1),
            clock: isNull(first + 2) ? nil : int64(first + 2)
        )
    }
}
