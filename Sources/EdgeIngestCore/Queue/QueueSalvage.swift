#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Rebuilds a queue file that SQLite itself reports damaged (a truncated
/// file, a broken b-tree page): every row that can still be read is copied
/// into a fresh file in the current format, which then replaces the
/// damaged one. The damaged file (and its `-wal`) is first copied, as it
/// is, to `<file>.corrupt-<ms>`. Rows are copied exactly as stored — their
/// checksums come along — so ``DurableQueue/repair()``, run on the rebuilt
/// file next, quarantines any that were damaged too and counts what could
/// not be read as dropped (reason `damaged`).
enum QueueSalvage {
    struct Outcome {
        /// Where the damaged file was copied before anything changed.
        var savedCopy: String
        /// Rows of segments, dead letters and quarantine copied over.
        var rowsCopied = 0
        /// Rows SQLite found but could not read (their records are counted
        /// as lost once the accounting is corrected, with those in pages it
        /// could not find at all).
        var rowsUnreadable = 0
        /// Small tables (counters, positions, meta) that could not be read.
        var tablesUnreadable: [String] = []
        /// Tables whose `CREATE` text in the schema was damaged and put back.
        var schemaRowsRestored = 0
    }

    /// A bit flipped in a table's `CREATE` text makes SQLite refuse the
    /// whole file ("malformed database schema"). The fresh file holds the
    /// text every table of this format must have: each table of the
    /// damaged file, found by type and name, gets it back (with
    /// `writable_schema`, which also lets a damaged schema be read at all).
    /// Works on the file being rebuilt, never on the saved copy. Returns
    /// how many rows were put back; a table whose name is damaged stays
    /// unreadable, and its rows are counted lost.
    private static func restoreSchema(path: String, from fresh: SQLiteConnection) -> Int {
        guard let canonical = try? fresh.prepare("SELECT sql FROM sqlite_master WHERE type = ?1 AND name = ?2"),
            let damaged = try? SQLiteConnection(path: path, displayName: path),
            (try? damaged.execute("PRAGMA writable_schema = ON")) != nil,
            let rows = try? damaged.prepare("SELECT rowid, type, name, CAST(sql AS BLOB) FROM sqlite_master"),
            let update = try? damaged.prepare("UPDATE sqlite_master SET sql = ?1 WHERE rowid = ?2")
        else { return 0 }
        var fixes: [(rowid: Int64, sql: String)] = []
        while (try? rows.step()) == true {
            canonical.bind(1, rows.string(1))
            canonical.bind(2, rows.string(2))
            defer { canonical.reset() }
            guard (try? canonical.step()) == true, !canonical.isNull(0) else { continue }
            let sql = canonical.string(0)
            if !rows.blob(3).elementsEqual(sql.utf8) { fixes.append((rows.int64(0), sql)) }
        }
        rows.reset()
        var restored = 0
        for fix in fixes {
            update.bind(1, fix.sql)
            update.bind(2, fix.rowid)
            if (try? update.run()) != nil { restored += 1 }
            update.reset()
        }
        return restored
    }

    /// The caller holds the file's lock and no connection to it.
    static func rebuild(path: String, now: Int64) throws -> Outcome {
        let saved = "\(path).corrupt-\(now)"
        for suffix in ["", "-wal"] where access(path + suffix, F_OK) == 0 {
            try copyFile(path + suffix, to: saved + suffix)
        }
        var outcome = Outcome(savedCopy: saved)
        makeTruncatedFileReadable(path)
        let temporary = path + ".rebuilt"
        unlink(temporary)
        try QueueFile.prepare(path: temporary)
        do {
            let fresh = try SQLiteConnection(path: temporary, displayName: path)
            // The canonical text of the format the file says it has: a format
            // 3 file's tables get format 3's back, not this format's.
            var declared = headerVersion(path)
            if declared != QueueFormat.currentVersion, declared != QueueFormat.currentVersion - 1,
                let readable = try? SQLiteConnection(path: path, displayName: path, readOnly: true),
                let inferred = QueueSchemaCheck.inferredVersion(of: readable)
            {
                declared = inferred
            }
            if let canonical = QueueSchemaCheck.canonical(
                version: declared == QueueFormat.currentVersion - 1 ? declared : QueueFormat.currentVersion
            ) {
                outcome.schemaRowsRestored = restoreSchema(path: path, from: canonical)
            }
            let damaged = try SQLiteConnection(path: path, displayName: path, readOnly: true)
            // A table whose schema row is still damaged (its root page, its
            // name) is then missing or unreadable alone, not the whole file.
            try damaged.execute("PRAGMA writable_schema = ON")
            // A format number that is not this one or the one before (a
            // flipped bit, a zeroed header), in a file whose tables are
            // those of one of them, column for column: that format.
            var version = (try? damaged.integer("PRAGMA user_version")) ?? -1
            if version != QueueFormat.currentVersion, version != QueueFormat.currentVersion - 1 {
                if let inferred = QueueSchemaCheck.inferredVersion(of: damaged) {
                    version = inferred
                } else if let flipped = oneBitFrom(version, segmentsOf: damaged) {
                    version = flipped
                }
            }
            // Format 3 (the previous release's) is rebuilt too: its rows are
            // copied by the columns both formats have, into this format.
            guard version == QueueFormat.currentVersion || version == QueueFormat.currentVersion - 1 else {
                throw EdgeIngestError(
                    .queueCorrupt,
                    "The queue file '\(path)' is too damaged to rebuild: its format cannot be read (\(version)). It was left as it was; move it aside to start a new queue (`ingestd run` does that by itself)."
                )
            }
            // No transaction: SQLite may roll one back by itself when a read
            // hits a damaged page. The new file is not in place yet, so it
            // needs no journal; it is fsynced before the rename.
            try fresh.execute("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA writable_schema = ON")
            try fresh.execute("ATTACH DATABASE '\(path.replacingQuotes)' AS damaged")
            // The damaged file's tables, when its schema table can be read.
            let present = (try? strings(fresh, "SELECT name FROM damaged.sqlite_master WHERE type = 'table'")).map(
                Set.init
            )
            let columnsOfVersion = QueueSchemaCheck.expected(version: version)
            for table in QueueFormat.tables {
                // A gateway's tables were outside format 3 (made when first
                // used): a format 3 file without them is whole.
                if let present, !present.contains(table), version < QueueFormat.currentVersion,
                    !QueueFormat.tablesOfFormat3.contains(table)
                {
                    continue
                }
                guard let columns = commonColumns(of: table, fresh, whenUnreadable: columnsOfVersion[table]) else {
                    // Its schema row is gone (a damaged name): none of its rows can be found.
                    outcome.tablesUnreadable.append(table)
                    continue
                }
                if QueueFormat.tablesWithIDs.contains(table) {
                    do {
                        let (copied, unreadable) = try copyRows(of: table, columns: columns, fresh)
                        outcome.rowsCopied += copied
                        outcome.rowsUnreadable += unreadable
                    } catch {
                        outcome.tablesUnreadable.append(table)
                    }
                } else {
                    // `WHERE 1` everywhere: without a WHERE, SQLite copies the
                    // stored records between identical tables as they are (its
                    // transfer optimization), damaged ones too, and the rebuilt
                    // file was then as malformed as the old one.
                    do {
                        try fresh.execute(
                            "INSERT OR REPLACE INTO main.\(table)(\(columns)) SELECT \(columns) FROM damaged.\(table) WHERE 1"
                        )
                    } catch {
                        outcome.tablesUnreadable.append(table)
                    }
                }
            }
            // Ids are never reused: each table's sequence is the highest either file had.
            try? fresh.execute(
                """
                UPDATE main.sqlite_sequence SET seq = max(seq, coalesce((SELECT max(seq) FROM damaged.sqlite_sequence AS d WHERE d.name = sqlite_sequence.name), 0));
                INSERT INTO main.sqlite_sequence(name, seq) SELECT name, max(seq) FROM damaged.sqlite_sequence WHERE name NOT IN (SELECT name FROM main.sqlite_sequence) GROUP BY name;
                """
            )
            try fresh.execute("DETACH DATABASE damaged")
            syncFile(temporary)
        } catch {
            unlink(temporary)
            // Put the file back as it was (its header may have been mended
            // above): the saved copy is the original, byte for byte.
            for suffix in ["", "-wal"] where access(saved + suffix, F_OK) == 0 {
                rename(saved + suffix, path + suffix)
            }
            throw error
        }
        for suffix in ["-wal", "-shm"] { unlink(path + suffix) }
        guard rename(temporary, path) == 0 else {
            throw EdgeIngestError(
                .queueUnavailable,
                "Cannot put the rebuilt queue in place of '\(path)': \(errnoText()). The damaged file's copy is at '\(saved)'."
            )
        }
        return outcome
    }

    /// Copies every readable row of `table` by its id. A damaged b-tree page
    /// makes a scan stop; seeking past it by id often reaches the rows
    /// behind it, so after a failure the next ids are probed at growing
    /// distances up to the highest id the table ever had.
    private static func copyRows(
        of table: String,
        columns: String,
        _ db: SQLiteConnection
    ) throws -> (copied: Int, unreadable: Int) {
        let next = try db.prepare("SELECT id FROM damaged.\(table) WHERE id > ?1 ORDER BY id LIMIT 1")
        let copy = try db.prepare(
            "INSERT INTO main.\(table)(\(columns)) SELECT \(columns) FROM damaged.\(table) WHERE id = ?1"
        )
        let highest = (try? db.integer("SELECT max(seq) FROM damaged.sqlite_sequence WHERE name = '\(table)'")) ?? 0
        var copied = 0
        var unreadable = 0
        var after: Int64 = 0
        var jump: Int64 = 1
        // Unreadable between `after` and the next readable row: probe further on.
        func probeFurther() -> Bool {
            let limit = highest > after ? highest : after + (1 << 40)
            guard jump < (1 << 40), after + jump <= limit else { return false }
            after += jump
            jump *= 2
            return true
        }
        while true {
            next.bind(1, after)
            let found: Int64?
            do {
                found = try next.step() ? next.int64(0) : nil
                next.reset()
            } catch {
                next.reset()
                guard probeFurther() else { break }
                continue
            }
            guard let id = found else { break }
            // A damaged page can answer an id that is not past `after`
            // (its keys out of order): taking it would loop for ever.
            guard id > after else {
                guard probeFurther() else { break }
                continue
            }
            jump = 1
            copy.bind(1, id)
            do {
                try copy.run()
                copied += 1
            } catch {
                copy.reset()
                unreadable += 1
            }
            after = id
        }
        return (copied, unreadable)
    }

    /// Puts back the header fields every queue file has alike (below). And:
    /// SQLite refuses every statement on a truncated file: its size is not
    /// a whole number of pages, and the header still counts the pages that
    /// are gone. Cut the torn last page off, then put the missing pages
    /// back as zeros: a table whose root page was cut off then reads as
    /// damaged (its rows are counted lost) instead of making the whole
    /// schema unreadable, as a header shrunk to the pages left did when the
    /// cut fell before a table's root ("invalid rootpage"). A page count
    /// too large to believe (a damaged header) is shrunk to what is there.
    /// The damaged original is kept in the saved copy.
    private static func makeTruncatedFileReadable(_ path: String) {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 100)
        guard header.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, 100, 0) }) == 100 else { return }
        var fixedHeader = header
        // The magic string, and the page size when it is not a power of two
        // (one flipped bit of 4096, the size SQLite gives every queue file).
        for (offset, byte) in "SQLite format 3\0".utf8.enumerated() { fixedHeader[offset] = byte }
        var raw = Int(header[16]) << 8 | Int(header[17])
        var pageSize = raw == 1 ? 65_536 : raw
        if pageSize < 512 || pageSize & (pageSize - 1) != 0 {
            raw = 4096
            pageSize = 4096
            fixedHeader[16] = 0x10
            fixedHeader[17] = 0
        }
        // Header fields every queue file has the same value in (WAL read and
        // write versions, payload fractions, schema format 4, UTF-8): a
        // flipped bit there makes SQLite refuse the file ("unsupported file
        // format"). The page size cannot be guessed and is only checked.
        for (offset, value) in [(18, 2), (19, 2), (21, 64), (22, 32), (23, 32), (44, 0), (45, 0), (46, 0), (47, 4)] {
            fixedHeader[offset] = UInt8(value)
        }
        for (offset, value) in [(56, 0), (57, 0), (58, 0), (59, 1)] { fixedHeader[offset] = UInt8(value) }
        if fixedHeader != header {
            _ = fixedHeader.withUnsafeBytes { pwrite(fd, $0.baseAddress, 100, 0) }
        }
        let size = Int(QueueFile.size(of: path))
        if size % pageSize != 0 { _ = ftruncate(fd, off_t(size - size % pageSize)) }
        let pages = UInt32(truncatingIfNeeded: size / pageSize)
        let declared =
            UInt32(header[28]) << 24 | UInt32(header[29]) << 16 | UInt32(header[30]) << 8 | UInt32(header[31])
        guard pages > 0, declared > pages else { return }
        if Int64(declared) * Int64(pageSize) <= max(Int64(size) * 64, 1 << 30) {
            _ = ftruncate(fd, off_t(Int64(declared) * Int64(pageSize)))
            return
        }
        let bytes: [UInt8] = [
            UInt8(pages >> 24), UInt8(pages >> 16 & 0xFF), UInt8(pages >> 8 & 0xFF), UInt8(pages & 0xFF),
        ]
        _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, 4, 28) }
    }

    /// The format (this one or the one before) that `version` is one
    /// flipped bit away from, when the file's segments table has that
    /// format's columns (other tables may be damaged too).
    private static func oneBitFrom(_ version: Int64, segmentsOf db: SQLiteConnection) -> Int64? {
        for candidate in [QueueFormat.currentVersion, QueueFormat.currentVersion - 1] {
            let flipped = version ^ candidate
            guard version >= 0, flipped & (flipped - 1) == 0,
                let wanted = QueueSchemaCheck.expected(version: candidate)["segments"],
                let statement = try? db.prepare("SELECT name FROM pragma_table_info('segments') ORDER BY cid")
            else { continue }
            var found: [String] = []
            while (try? statement.step()) == true { found.append(statement.string(0)) }
            if found == wanted { return candidate }
        }
        return nil
    }

    /// The format number in the file's header (`user_version`, bytes
    /// 60..<64), read without SQLite: a damaged schema does not stop it.
    private static func headerVersion(_ path: String) -> Int64 {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return -1 }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 4)
        guard bytes.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, 4, 60) }) == 4 else { return -1 }
        return bytes.reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    /// The columns `table` has in both files, comma-separated, in the
    /// fresh file's order (a format 3 file lacks format 4's columns). When
    /// the damaged file's own list cannot be read, those its format gives
    /// the table (`whenUnreadable`). Nil when the table has none.
    private static func commonColumns(
        of table: String,
        _ db: SQLiteConnection,
        whenUnreadable declared: [String]?
    ) -> String? {
        guard let ours = try? strings(db, "SELECT name FROM pragma_table_info('\(table)', 'main') ORDER BY cid")
        else { return nil }
        let listed = (try? strings(db, "SELECT name FROM pragma_table_info('\(table)', 'damaged')")) ?? []
        let theirs = Set(listed.isEmpty ? declared ?? [] : listed)
        let common = ours.filter(theirs.contains)
        return common.isEmpty ? nil : common.joined(separator: ", ")
    }

    private static func strings(_ db: SQLiteConnection, _ sql: String) throws -> [String] {
        let statement = try db.prepare(sql)
        var out: [String] = []
        while try statement.step() { out.append(statement.string(0)) }
        return out
    }

    private static func syncFile(_ path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    private static func copyFile(_ source: String, to target: String) throws {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else {
            throw EdgeIngestError(.queueUnavailable, "Cannot read the queue file '\(source)': \(errnoText()).")
        }
        defer { close(input) }
        let output = open(target, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard output >= 0 else {
            throw EdgeIngestError(.queueUnavailable, "Cannot write '\(target)': \(errnoText()).")
        }
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count == 0 { break }
            guard count > 0 else {
                throw EdgeIngestError(.queueUnavailable, "Cannot read the queue file '\(source)': \(errnoText()).")
            }
            let written = buffer.withUnsafeBytes { write(output, $0.baseAddress, count) }
            guard written == count else {
                throw EdgeIngestError(.queueUnavailable, "Cannot write '\(target)': \(errnoText()).")
            }
        }
        fsync(output)
    }
}

extension String {
    /// For an SQL string literal.
    fileprivate var replacingQuotes: String {
        split(separator: "'", omittingEmptySubsequences: false).joined(separator: "''")
    }
}
