import CSQLite

/// SQLite's process-wide settings, made once before the first connection:
/// no memory statistics (nothing here reads them, and they cost a global
/// mutex around every allocation SQLite makes, on every thread).
private let sqliteConfigured: Void = { _ = edgeingest_sqlite_disable_memory_statistics() }()

/// A thin owner of one `sqlite3*` connection. Not thread-safe: the queue
/// uses it only under its lock. Errors name the database path.
final class SQLiteConnection {
    let handle: OpaquePointer
    /// The path or in-memory name, for error messages.
    let displayName: String
    /// What the database is to the user, for error messages: "queue", "archive".
    let role: String

    /// Opens (creating if needed) a database. `path` may be `:memory:`.
    /// `readOnly` opens an existing file for reading only (alongside a
    /// writer in another process: WAL lets readers see its last commit).
    init(path: String, displayName: String, role: String = "queue", readOnly: Bool = false) throws {
        _ = sqliteConfigured
        var db: OpaquePointer?
        let flags =
            readOnly
            ? SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
            : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let detail = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(rc))
            if let db { sqlite3_close_v2(db) }
            throw EdgeIngestError(
                .queueUnavailable,
                "Cannot open the \(role) '\(displayName)': \(detail). Check that the directory exists and is writable by this user."
            )
        }
        handle = db
        self.displayName = displayName
        self.role = role
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, 5_000)
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// Rows changed by the last statement.
    var changes: Int { Int(sqlite3_changes(handle)) }

    /// Runs one or more statements that return no rows.
    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &message)
        if rc != SQLITE_OK {
            let detail = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(rc))
            sqlite3_free(message)
            throw error(rc, detail: detail, doing: "running \(sql.prefix(40))")
        }
    }

    /// Prepares a statement to be stepped and reset many times.
    func prepare(_ sql: String) throws -> SQLiteStatement {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            throw error(rc, detail: String(cString: sqlite3_errmsg(handle)), doing: "preparing \(sql.prefix(40))")
        }
        return SQLiteStatement(stmt, connection: self)
    }

    /// Runs a query returning a single integer (a PRAGMA, a count).
    func integer(_ sql: String) throws -> Int64 {
        let stmt = try prepare(sql)
        guard try stmt.step() else { return 0 }
        return stmt.int64(0)
    }

    /// Runs `body` in an IMMEDIATE transaction, committing if it returns and
    /// rolling back if it throws.
    /// Runs `body` in a transaction of its own, or in the caller's if one is open.
    func transactionIfNeeded<T>(_ body: () throws -> T) throws -> T {
        sqlite3_get_autocommit(handle) == 0 ? try body() : try transaction(body)
    }

    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Maps an SQLite result code to an error that says what to do.
    func error(_ rc: Int32, detail: String, doing: String) -> EdgeIngestError {
        let primary = rc & 0xFF
        switch primary {
        case SQLITE_FULL:
            return EdgeIngestError(
                .diskFull,
                "The disk holding the \(role) '\(displayName)' is full (\(detail)). Free space\(role == "queue" ? ", or lower the queue's max_bytes so the overflow policy applies first" : "")."
            )
        case SQLITE_NOTADB, SQLITE_CORRUPT,
            SQLITE_ERROR where detail == "unsupported file format":
            // The last: a header field out of range (a flipped bit, or a file
            // from a newer SQLite): the file cannot be read as it is.
            return EdgeIngestError(
                .queueCorrupt,
                "The \(role) file '\(displayName)' is damaged or not a database (\(detail)). It was left untouched: \(role == "queue" ? "stop the agent and run `ingestd repair` (it keeps a copy and rebuilds what can be read), or move it away to start a new queue" : "move it away to start a new \(role)")."
            )
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY, SQLITE_AUTH:
            return EdgeIngestError(
                .queueUnavailable,
                "The \(role) '\(displayName)' cannot be written (\(detail)). Check the permissions of the file and its directory."
            )
        case SQLITE_CONSTRAINT:
            // A row the table's own rules refuse (NOT NULL, CHECK, UNIQUE…):
            // about that row, not the file. `detail` is SQLite's message.
            return EdgeIngestError(.invalidRecord, detail)
        case SQLITE_BUSY, SQLITE_LOCKED:
            return EdgeIngestError(
                .queueUnavailable,
                "The \(role) '\(displayName)' is locked by another connection (\(detail)). Is another ingestd using the same \(role)?"
            )
        default:
            return EdgeIngestError(
                .storage,
                "SQLite failed while \(doing) on the \(role) '\(displayName)': \(detail) (code \(rc))."
            )
        }
    }
}

/// A prepared statement. Bound blobs must stay alive until the statement is
/// reset: the queue binds buffers it holds for the whole step.
final class SQLiteStatement {
    private let stmt: OpaquePointer
    private unowned let connection: SQLiteConnection

    init(_ stmt: OpaquePointer, connection: SQLiteConnection) {
        self.stmt = stmt
        self.connection = connection
    }

    deinit { sqlite3_finalize(stmt) }

    func bind(_ index: Int32, _ value: Int64) {
        sqlite3_bind_int64(stmt, index, value)
    }

    func bind(_ index: Int32, _ value: Double) {
        sqlite3_bind_double(stmt, index, value)
    }

    /// Binds UTF-8 text without copying; `bytes` must outlive the step.
    func bind(_ index: Int32, text bytes: UnsafeRawBufferPointer) {
        sqlite3_bind_text(
            stmt,
            index,
            (bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!).assumingMemoryBound(to: CChar.self),
            Int32(bytes.count),
            edgeingest_sqlite_static()
        )
    }

    func bind(_ index: Int32, _ value: String) {
        sqlite3_bind_text(stmt, index, value, -1, edgeingest_sqlite_transient())
    }

    /// Binds a blob without copying; `bytes` must outlive the step.
    func bind(_ index: Int32, blob bytes: UnsafeRawBufferPointer) {
        sqlite3_bind_blob(
            stmt,
            index,
            bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1),
            Int32(bytes.count),
            edgeingest_sqlite_static()
        )
    }

    /// Steps once; true if a row is available.
    @discardableResult
    func step() throws -> Bool {
        let rc = sqlite3_step(stmt)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let detail = String(cString: sqlite3_errmsg(connection.handle))
            sqlite3_reset(stmt)
            throw connection.error(
                rc,
                detail: detail,
                doing: "running \(String(cString: sqlite3_sql(stmt)).prefix(40))"
            )
        }
    }

    /// Steps to completion and resets, for statements that return no rows.
    func run() throws {
        defer { reset() }
        while try step() {}
    }

    func reset() {
        sqlite3_reset(stmt)
        sqlite3_clear_bindings(stmt)
    }

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(stmt, column) }

    func string(_ column: Int32) -> String {
        guard let text = sqlite3_column_text(stmt, column) else { return "" }
        return String(cString: text)
    }

    func isNull(_ column: Int32) -> Bool { sqlite3_column_type(stmt, column) == SQLITE_NULL }

    /// The column's bytes, valid until the next step or reset.
    func blob(_ column: Int32) -> UnsafeRawBufferPointer {
        let count = Int(sqlite3_column_bytes(stmt, column))
        guard count > 0, let base = sqlite3_column_blob(stmt, column) else {
            return UnsafeRawBufferPointer(start: nil, count: 0)
        }
        return UnsafeRawBufferPointer(start: base, count: count)
    }
}
