// # The queue's on-disk format
//
// One SQLite database in WAL mode (`<file>`, `<file>-wal`, `<file>-shm`).
// `PRAGMA application_id` is 0x45444749 ("EDGI"); `PRAGMA user_version` is
// the format version below. docs/QUEUE.md explains the choices and costs.
//
// ## Tables (format 1)
//
// segments — one row per appended run of records of one type:
//   id             INTEGER PRIMARY KEY  append order (never reused: AUTOINCREMENT)
//   type           TEXT     record type name
//   schema_version INTEGER  configuration schema version at append
//   enqueued_at    INTEGER  ms since the epoch, commit time of the append
//   record_count   INTEGER  records in the row (>= 1)
//   payload_bytes  INTEGER  length(payload)
//   consumed       INTEGER  records at the front already acknowledged (0..<record_count)
//   consumed_bytes INTEGER  bytes of those records in payload
//   ids            BLOB     record_count × 12 bytes: each record's _id
//   payload        BLOB     record_count JSON lines, each ending in "\n"
//                           (with an encryption key: nonce ‖ AES-256-GCM
//                           ciphertext ‖ tag of those lines; payload_bytes
//                           and consumed_bytes count the plaintext)
// counters — name → value: appended_total, acknowledged_total, dropped.<reason>
// positions — source → position: input offsets, committed with their records
// meta — key → value: max_schema_version; key_check (encrypted queues);
//   session_nonce, session_epoch, client_reset_pending (the upload session,
//   docs/PROTOCOL.md "Client reset"); opened_online (OpenBehavior.once)
// dead_letters (format 2) — records the backend refused one by one (poison
//   records isolated by bisection): kept with the reason, never retried
//   automatically, exported or replayed by the operator.
//
// Format 3 (integrity, and room for compressed storage):
// segments.codec    INTEGER  how payload is stored: 0 = the JSON lines as
//                            they are, 1 = one zstd frame of them
//                            (`SegmentCodec`; payload_bytes stays the plain
//                            size). A reader that does not know a codec
//                            refuses the file as too new.
// segments.checksum INTEGER  CRC-32 (zlib's) over the row's type, schema
//                            version, enqueue time, record count, payload
//                            length, codec, ids and payload as stored
//                            (`SegmentChecksum`). NULL for a row written
//                            before format 3: it is checked by its
//                            structure only (invariant 3) until uploaded.
// dead_letters.checksum      the same over a dead letter's row.
// quarantine — damaged segments and dead letters, moved out of the queue
//   whole and as stored, with the problem found; never uploaded, counted
//   in counters.quarantined_total (records).
//
// Format 4 (one migration for the gateway's memory, the clock and several
// sinks; docs/QUEUE.md "The format (version 4)"):
// received_groups_0, received_groups_1, received_sessions — a gateway's
//   received ids that share a 128-id bucket with others of their batch
//   (``ReceivedIDs``), and its clients' sessions. Format 3 files had them
//   outside the format (made when first used); the migration keeps their
//   rows.
// received_runs_0, received_runs_1 — received ids alone in their bucket, in runs
//   (``ReceivedIDRun``): key = the account's name ‖ the id's first 5 bytes
//   (unique); ids = the other 7 bytes of each id, ascending; contents = the
//   CRC-32 of each one's line, 4 bytes little-endian. Rowid tables: a run
//   holds up to thousands of ids, and in a WITHOUT ROWID table every
//   b-tree level would hold (and compare) whole rows.
// received_pending — such ids not yet folded into the runs, a row per
//   stored batch (written in its transaction): tenant, ids (12 bytes
//   each), contents (4 bytes each).
// segments.boot              INTEGER  the boot the segment was accepted in:
//                                     the first 8 bytes of the kernel's
//                                     boot_id (``Acceptance``); NULL for a
//                                     row from before format 4
// segments.accepted_boottime INTEGER  ms on CLOCK_BOOTTIME at the commit
// segments.clock             INTEGER  the wall clock then: 1 synchronised,
//                                     0 not, NULL unknown
// segments.sinks             INTEGER  the sinks the records are routed to,
//                                     a bit per sinks.id; NULL: sink 0 alone
//                                     (the one `[upload]`). Reserved for
//                                     several sinks: no version writes it yet.
// boots — boot → boot_id (16 bytes), first_seen_at; offset_ms and
//   synchronised_at once the wall clock was known synchronised in that
//   boot (wall time = accepted_boottime + offset_ms). Written when a store
//   opens for writing and before an append's transaction (never inside
//   one); a copy brings the rows of the boots it copies.
// sinks, sink_progress, dead_letters.sink — reserved for several sinks:
//   a sink's id and name, and how far a sink is ahead of a segment's
//   common acknowledged prefix. Empty/NULL in every file written so far.
// quarantine.boot, .accepted_boottime, .clock, .sinks — a quarantined
//   segment's, as stored.
// The segment checksum also covers boot, accepted_boottime and clock on
// rows that have a boot.

// ## Invariants
//
// 1. An append is one transaction: its segments, its counter updates and its
//    input positions are all durable or all absent. No partial batch exists.
// 2. Records leave only by acknowledgement (head first, in order: the
//    consumed prefix grows, then the row is deleted) or by a counted drop,
//    in the same transaction as the counter that accounts for them.
// 3. length(ids) = 12 × record_count and payload holds record_count
//    newline-terminated lines; the reader checks both and reports a damaged
//    segment instead of sending garbage.
// 4. Queued records = Σ(record_count − consumed); queued bytes =
//    Σ(payload_bytes − consumed_bytes).
// 5. Every row read for upload, export, copy, migration or replay is
//    checked (checksum, then invariant 3 on the consumed prefix); a row that
//    fails is quarantined, never sent. appended_total = queued +
//    acknowledged_total + dead_lettered_total + quarantined_total +
//    Σ dropped.<reason>.
//
// Shipped migrations are never edited: add a new one at the end.

/// The schema migrations, in order. Index i migrates format i to i + 1.
enum QueueFormat {
    static let applicationID: Int64 = 0x4544_4749
    static var currentVersion: Int64 { Int64(migrations.count) }

    static let migrations: [String] = [
        // 0 → 1
        """
        CREATE TABLE segments(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            type TEXT NOT NULL,
            schema_version INTEGER NOT NULL,
            enqueued_at INTEGER NOT NULL,
            record_count INTEGER NOT NULL CHECK (record_count > 0),
            payload_bytes INTEGER NOT NULL,
            consumed INTEGER NOT NULL DEFAULT 0,
            consumed_bytes INTEGER NOT NULL DEFAULT 0,
            ids BLOB NOT NULL,
            payload BLOB NOT NULL
        );
        CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE positions(source TEXT PRIMARY KEY, position TEXT NOT NULL, updated_at INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
        """,
        // 1 → 2
        """
        CREATE TABLE dead_letters(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            record_id BLOB NOT NULL,
            type TEXT NOT NULL,
            schema_version INTEGER NOT NULL,
            enqueued_at INTEGER NOT NULL,
            failed_at INTEGER NOT NULL,
            reason TEXT NOT NULL,
            payload BLOB NOT NULL
        );
        """,
        // 2 → 3
        """
        ALTER TABLE segments ADD COLUMN codec INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE segments ADD COLUMN checksum INTEGER;
        ALTER TABLE dead_letters ADD COLUMN checksum INTEGER;
        CREATE TABLE quarantine(
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            origin TEXT NOT NULL,
            type TEXT,
            schema_version INTEGER,
            enqueued_at INTEGER,
            record_count INTEGER NOT NULL,
            found_at INTEGER NOT NULL,
            problem TEXT NOT NULL,
            ids BLOB,
            payload BLOB
        );
        """,
        // 3 → 4
        """
        CREATE TABLE IF NOT EXISTS received_groups_0(key BLOB PRIMARY KEY, members BLOB NOT NULL, contents BLOB) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS received_groups_1(key BLOB PRIMARY KEY, members BLOB NOT NULL, contents BLOB) WITHOUT ROWID;
        CREATE TABLE IF NOT EXISTS received_sessions(nonce TEXT PRIMARY KEY, epoch INTEGER NOT NULL, seen_at INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE received_runs_0(id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, ids BLOB NOT NULL, contents BLOB NOT NULL);
        CREATE TABLE received_runs_1(id INTEGER PRIMARY KEY, key BLOB NOT NULL UNIQUE, ids BLOB NOT NULL, contents BLOB NOT NULL);
        CREATE TABLE received_pending(id INTEGER PRIMARY KEY, tenant BLOB NOT NULL, ids BLOB NOT NULL, contents BLOB NOT NULL);
        ALTER TABLE segments ADD COLUMN boot INTEGER;
        ALTER TABLE segments ADD COLUMN accepted_boottime INTEGER;
        ALTER TABLE segments ADD COLUMN clock INTEGER;
        ALTER TABLE segments ADD COLUMN sinks INTEGER;
        ALTER TABLE dead_letters ADD COLUMN sink INTEGER;
        ALTER TABLE quarantine ADD COLUMN boot INTEGER;
        ALTER TABLE quarantine ADD COLUMN accepted_boottime INTEGER;
        ALTER TABLE quarantine ADD COLUMN clock INTEGER;
        ALTER TABLE quarantine ADD COLUMN sinks INTEGER;
        CREATE TABLE boots(
            boot INTEGER PRIMARY KEY,
            boot_id BLOB NOT NULL,
            first_seen_at INTEGER NOT NULL,
            offset_ms INTEGER,
            synchronised_at INTEGER
        );
        CREATE TABLE sinks(id INTEGER PRIMARY KEY CHECK (id BETWEEN 0 AND 62), name TEXT NOT NULL UNIQUE, added_at INTEGER NOT NULL);
        CREATE TABLE sink_progress(
            sink INTEGER NOT NULL,
            segment INTEGER NOT NULL,
            consumed INTEGER NOT NULL,
            consumed_bytes INTEGER NOT NULL,
            PRIMARY KEY(sink, segment)
        ) WITHOUT ROWID;
        """,
    ]

    /// Every table of the current format (those ``QueueSchemaCheck`` checks
    /// and ``QueueSalvage`` rebuilds).
    static let tables = [
        "segments", "counters", "positions", "meta", "dead_letters", "quarantine", "received_groups_0",
        "received_groups_1", "received_sessions", "received_runs_0", "received_runs_1", "received_pending", "boots",
        "sinks", "sink_progress",
    ]

    /// The tables every format 3 file has.
    static let tablesOfFormat3: Set = ["segments", "counters", "positions", "meta", "dead_letters", "quarantine"]

    /// Tables with an `id` row key, copied row by row when rebuilt.
    static let tablesWithIDs: Set = ["segments", "dead_letters", "quarantine"]
}
