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
            let damaged = try SQLiteConnection(path: path, displayName: path, readOnly: true)
            let version = (try? damaged.integer("PRAGMA user_version")) ?? -1
            guard version == QueueFormat.currentVersion else {
                throw EdgeIngestError(
                    .queueCorrupt,
                    "The queue file '\(path)' is too damaged to rebuild: its format cannot be read (\(version)). A copy is at '\(saved)'; move the file aside to start a new queue."
                )
            }
            // No transaction: SQLite may roll one back by itself when a read
            // hits a damaged page. The new file is not in place yet, so it
            // needs no journal; it is fsynced before the rename.
            try fresh.execute("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF")
            try fresh.execute("ATTACH DATABASE '\(path.replacingQuotes)' AS damaged")
            for table in ["counters", "positions", "meta"] {
                do {
                    try fresh.execute("INSERT OR REPLACE INTO main.\(table) SELECT * FROM damaged.\(table)")
                } catch {
                    outcome.tablesUnreadable.append(table)
                }
            }
            for table in ["segments", "dead_letters", "quarantine"] {
                let (copied, unreadable) = try copyRows(of: table, fresh)
                outcome.rowsCopied += copied
                outcome.rowsUnreadable += unreadable
            }
            try? fresh.execute("INSERT OR REPLACE INTO main.sqlite_sequence SELECT * FROM damaged.sqlite_sequence")
            try fresh.execute("DETACH DATABASE damaged")
            syncFile(temporary)
        } catch {
            unlink(temporary)
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
    private static func copyRows(of table: String, _ db: SQLiteConnection) throws -> (copied: Int, unreadable: Int) {
        let next = try db.prepare("SELECT id FROM damaged.\(table) WHERE id > ?1 ORDER BY id LIMIT 1")
        let copy = try db.prepare("INSERT INTO main.\(table) SELECT * FROM damaged.\(table) WHERE id = ?1")
        let highest = (try? db.integer("SELECT max(seq) FROM damaged.sqlite_sequence WHERE name = '\(table)'")) ?? 0
        var copied = 0
        var unreadable = 0
        var after: Int64 = 0
        var jump: Int64 = 1
        while true {
            next.bind(1, after)
            let found: Int64?
            do {
                found = try next.step() ? next.int64(0) : nil
                next.reset()
            } catch {
                next.reset()
                // Unreadable between `after` and the next readable row: probe further on.
                let limit = highest > 0 ? highest : after + (1 << 40)
                guard jump < (1 << 40), after + jump <= limit else { break }
                after += jump
                jump *= 2
                continue
            }
            guard let id = found else { break }
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

    /// SQLite refuses every statement on a truncated file: its size is not
    /// a whole number of pages, and the header still counts the pages that
    /// are gone. Cut the torn last page off and make the header's page
    /// count (bytes 28–31) match what is there. The damaged original is
    /// kept in the saved copy.
    private static func makeTruncatedFileReadable(_ path: String) {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 100)
        guard header.withUnsafeMutableBytes({ pread(fd, $0.baseAddress, 100, 0) }) == 100 else { return }
        let raw = Int(header[16]) << 8 | Int(header[17])
        let pageSize = raw == 1 ? 65_536 : raw
        guard pageSize >= 512, pageSize & (pageSize - 1) == 0 else { return }
        let size = Int(QueueFile.size(of: path))
        if size % pageSize != 0 { _ = ftruncate(fd, off_t(size - size % pageSize)) }
        let pages = UInt32(truncatingIfNeeded: size / pageSize)
        let declared =
            UInt32(header[28]) << 24 | UInt32(header[29]) << 16 | UInt32(header[30]) << 8 | UInt32(header[31])
        guard pages > 0, declared > pages else { return }
        let bytes: [UInt8] = [
            UInt8(pages >> 24), UInt8(pages >> 16 & 0xFF), UInt8(pages >> 8 & 0xFF), UInt8(pages & 0xFF),
        ]
        _ = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, 4, 28) }
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
