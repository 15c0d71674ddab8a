/// PostgreSQL through libpq: a table per record type with `_id` as its
/// primary key; each batch is **one** `INSERT … ON CONFLICT (_id) DO NOTHING`
/// statement (one transaction), whose only parameter is the batch as a JSON
/// array, taken apart by the server's `jsonb_to_recordset`. A batch sent
/// again (a lost answer, a crash before the queue's delete, a batch cut
/// differently after a restart) is stored once: exactly once per `_id`.
/// The insert commits (with the server's `synchronous_commit`) before the
/// uploader deletes the records from the queue.
///
/// ```toml
/// [upload]
/// sink = "postgresql"
/// url = "postgresql://ingest@db.example:5432/telemetry?sslmode=verify-full"
/// password_file = "/etc/ingestd/postgres-password"
/// ```
///
/// Tables are created on first use (`CREATE TABLE IF NOT EXISTS`), and a
/// field added to a type later is added as a column (`ADD COLUMN IF NOT
/// EXISTS`); no DDL is sent when the table already has every column, so a
/// table made by a DBA (with constraints, partitions, grants) works with an
/// agent that may only INSERT.
///
/// | field type | column |
/// | --- | --- |
/// | string, objectId | text |
/// | timestamp | timestamptz |
/// | int | bigint |
/// | double | double precision |
/// | bool | boolean |
///
/// Errors go by SQLSTATE (``classify(_:)``): data errors are bisected to the
/// poison record(s), which go to the dead-letter table; a wrong table,
/// missing rights or a wrong password hold the queue and say why; lost
/// connections, timeouts and a server short of resources are retried.
package final class PostgresSink: BatchSink {
    let settings: PostgresSettings
    let types: [String: RecordType]
    private var connection: PostgresConnection?
    /// The insert per record type name, for the open connection.
    private var inserts: [String: String] = [:]

    /// Records stored and `_id`s already present, since this sink was made.
    package private(set) var storedCount = 0
    package private(set) var duplicateCount = 0

    /// The field that, with `_id`, keys each table of a type that has it
    /// (a gateway's `owner_field`): tables made here get that primary key,
    /// and the insert skips conflicts on it. A table keyed on `_id` alone
    /// is refused by PostgreSQL (42P10), which holds uploads with its message.
    let ownerField: String?

    package init(settings: PostgresSettings, types: [RecordType], ownerField: String? = nil) {
        self.settings = settings
        self.ownerField = ownerField
        self.types = Dictionary(types.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    package var description: String { settings.description }

    /// Connecting, then at most: the columns query, either the CREATE or one
    /// ALTER per missing column (all of them on a table with only `_id`),
    /// and the insert — each with its own `timeout_ms`.
    package var deliveryTimeLimitMilliseconds: Int? {
        let statements = 2 + max(1, types.values.map(\.fields.count).max() ?? 0)
        return settings.connectTimeoutMilliseconds + statements * settings.timeoutMilliseconds
    }

    package func deliver(_ batch: SinkBatch) -> UploadOutcome {
        guard let type = types[batch.type] else {
            return .hold(
                reason:
                    "the postgresql sink has no declaration of record type '\(batch.type)': declare it under [types]"
            )
        }
        do throws(PostgresError) {
            let db = try open()
            let insert = try insertStatement(for: type, in: db)
            let answer = try db.execute(insert, cStrings: [Self.jsonArray(batch.payload)])
            storedCount += answer.affected
            duplicateCount += batch.recordCount - answer.affected
            return .stored(rejected: [])
        } catch {
            let outcome = Self.classify(error)
            if connection?.isBroken ?? true || error.kind == .timeout {
                // After a timeout the answer may still come: start afresh.
                connection = nil
                inserts = [:]
            } else if case .badBatch = outcome {
                // The data, not the table: the statement stays (bisection reuses it).
            } else {
                // The table may have changed (dropped, a column gone): look again next time.
                inserts = [:]
            }
            return outcome
        }
    }

    private func open() throws(PostgresError) -> PostgresConnection {
        if let connection { return connection }
        let db = try PostgresConnection(settings: settings)
        connection = db
        return db
    }

    /// `"schema"."table"` for records of `type`.
    func tableName(for type: RecordType) -> String {
        (settings.schema.map { sqlIdentifier($0) + "." } ?? "") + sqlIdentifier(settings.table ?? type.name)
    }

    /// Creates or widens the type's table when it lacks a column, and
    /// returns the insert (parameter 1: the batch as a JSON array).
    private func insertStatement(for type: RecordType, in db: PostgresConnection) throws(PostgresError) -> String {
        if let prepared = inserts[type.name] { return prepared }
        let table = tableName(for: type)
        let existing = Set(
            try db.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = COALESCE($1, current_schema()) AND table_name = $2",
                [settings.schema, settings.table ?? type.name]
            ).firstColumn
        )
        let owner = ownerField.flatMap { name in type.fields.contains { $0.name == name } ? name : nil }
        let key = ((owner.map { [$0] } ?? []) + [RecordType.primaryKey]).map(sqlIdentifier).joined(separator: ", ")
        if existing.isEmpty {
            // RecordType.fields never holds _id: it is every record's primary key.
            let definitions =
                ["\"_id\" text NOT NULL"]
                + type.fields.map {
                    "\(sqlIdentifier($0.name)) \(Self.columnType($0.type))\($0.name == owner ? " NOT NULL" : "")"
                }
                + ["PRIMARY KEY (\(key))"]
            _ = try db.execute("CREATE TABLE IF NOT EXISTS \(table) (\(definitions.joined(separator: ", ")))")
        } else {
            for field in type.fields where !existing.contains(field.name) {
                _ = try db.execute(
                    "ALTER TABLE \(table) ADD COLUMN IF NOT EXISTS \(sqlIdentifier(field.name)) \(Self.columnType(field.type))"
                )
            }
        }
        let columns = ([RecordType.primaryKey] + type.fields.map(\.name)).map(sqlIdentifier).joined(separator: ", ")
        let shape = ([("_id", "text")] + type.fields.map { ($0.name, Self.columnType($0.type)) })
            .map { "\(sqlIdentifier($0.0)) \($0.1)" }.joined(separator: ", ")
        // A record without an owner is stored under '' (a key column is never NULL).
        let values = ([RecordType.primaryKey] + type.fields.map(\.name)).map {
            $0 == owner ? "COALESCE(\(sqlIdentifier($0)), '')" : sqlIdentifier($0)
        }
        let statement =
            "INSERT INTO \(table) (\(columns)) SELECT \(values.joined(separator: ", ")) FROM jsonb_to_recordset($1::jsonb) AS r(\(shape)) ON CONFLICT (\(key)) DO NOTHING"
        inserts[type.name] = statement
        return statement
    }

    /// The queued NDJSON (one object per line, each ending in "\n") as a
    /// NUL-terminated JSON array: `[line,line,…]\0`.
    static func jsonArray(_ payload: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "[")]
        out.reserveCapacity(payload.count + 3)
        out += payload
        while let last = out.last, last == UInt8(ascii: "\n") { out.removeLast() }
        for i in out.indices where out[i] == UInt8(ascii: "\n") { out[i] = UInt8(ascii: ",") }
        out += [UInt8(ascii: "]"), 0]
        return out
    }

    /// What a failure means for the uploader. Pure, for table tests.
    ///
    /// | SQLSTATE | meaning | outcome |
    /// | --- | --- | --- |
    /// | 22…, 23…, 54… | a value the column cannot take, a constraint, a program limit (a row or index entry too large) | bisect, dead-letter |
    /// | 28…, 3D000, 3F000, 42…, 25006, 0A000 | password, database, schema, table, column, rights, read-only | hold |
    /// | 08…, 53…, 57…, 40001, 40P01, 55P03, 58…, XX… and the rest | connection, resources, shutdown, conflicts | retry |
    package static func classify(_ error: PostgresError) -> UploadOutcome {
        switch error.kind {
        case .configuration:
            return .hold(reason: error.message)
        case .timeout:
            return .retry(reason: error.message, retryAfterSeconds: nil)
        case .connection:
            if refusedLogin(error.message) {
                return .hold(reason: error.message + ": fix upload.url or upload.password_file")
            }
            return .retry(reason: error.message, retryAfterSeconds: nil)
        case .server(let state):
            let sqlClass = state.prefix(2)
            // 54 (program limit) is raised for one record too ("index row size
            // exceeds…"): bisecting isolates it, where a split would shrink
            // every later batch for good.
            if ["22", "23", "54"].contains(sqlClass) { return .badBatch(reason: error.message) }
            if ["28", "42"].contains(sqlClass) || ["3D000", "3F000", "25006", "0A000"].contains(state) {
                return .hold(reason: error.message + ": fix the table, its rights or [upload]")
            }
            return .retry(reason: error.message, retryAfterSeconds: nil)
        }
    }

    /// Connection failures no retry fixes: the server refused the login or
    /// has no such database or role. These are the server's FATAL messages
    /// in English: a server with another `lc_messages` makes them retries.
    static func refusedLogin(_ message: String) -> Bool {
        [
            "password authentication failed", "no pg_hba.conf entry", "does not exist", "no password supplied",
            "authentication method",
        ]
        .contains { message.contains($0) }
    }

    static func columnType(_ type: FieldType) -> String {
        switch type.kind {
        case .string, .objectId: return "text"
        case .timestamp: return "timestamptz"
        case .int: return "bigint"
        case .double: return "double precision"
        case .bool: return "boolean"
        }
    }
}
