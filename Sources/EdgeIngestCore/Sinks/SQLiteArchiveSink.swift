/// The embedded default backend: every confirmed record lands in a plain
/// SQLite table named after its record type, one column per declared field
/// plus `_id` as the primary key. An insert whose `_id` is already stored is
/// skipped (`ON CONFLICT("_id") DO NOTHING`), so a batch sent again after a
/// crash is stored once: exactly once per `_id`. Any other refusal of the
/// table (a NOT NULL, CHECK or type constraint an operator added) is that
/// record's rejection, with SQLite's message: it becomes a dead letter,
/// never a reading counted as uploaded that is not there.
///
/// The archive commits (WAL, `synchronous=FULL`) before the uploader deletes
/// the records from the queue, so a power cut loses nothing in between.
/// Each queued JSON line is parsed once by our NDJSON parser and its values
/// bound as the insert's parameters, as SQLite's `json_extract` would give
/// them (``ArchiveRowBinder``; `json_extract` per column was 3.1× faster
/// than JSONDecoder, and parsing it ourselves is cheaper again:
/// docs/BENCHMARKS.md, "Drained into the SQLite archive sink").
/// Tables are created on first use; a field added to a type later becomes
/// a new column (`ALTER TABLE … ADD COLUMN`), older rows hold NULL there.
///
/// ```toml
/// [upload]
/// sink = "sqlite"
/// path = "/var/lib/ingestd/archive.sqlite"
/// ```
///
/// With an owner field (a gateway's `owner_field`, the account each
/// record came from), tables are keyed on (owner, `_id`) instead: two
/// accounts' records with the same `_id` are both stored, and a record
/// without an owner is stored under ''. A table made before with another
/// key holds uploads with a message saying so.
///
/// | field type | column |
/// | --- | --- |
/// | string, timestamp (ISO 8601 UTC text), objectId (hex) | TEXT |
/// | int, bool (0/1) | INTEGER |
/// | double | REAL |
package final class SQLiteArchiveSink: BatchSink {
    let path: String
    let types: [String: RecordType]
    /// The field that, with `_id`, keys each table of a type that has it.
    let ownerField: String?
    private var connection: SQLiteConnection?
    /// The prepared insert per type name, for the open connection.
    private var inserts: [String: SQLiteStatement] = [:]
    /// Each type's binder (its parser's buffers kept from batch to batch).
    private var binders: [String: ArchiveRowBinder] = [:]

    /// Records stored and `_id`s already present, since this sink was made.
    package private(set) var storedCount = 0
    package private(set) var duplicateCount = 0

    package init(path: String, types: [RecordType], ownerField: String? = nil) {
        self.path = path
        self.ownerField = ownerField
        self.types = Dictionary(types.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    package var description: String { "SQLite archive \(path)" }

    package func deliver(_ batch: SinkBatch) -> UploadOutcome {
        guard let type = types[batch.type] else {
            return .hold(
                reason: "the SQLite archive has no declaration of record type '\(batch.type)': declare it under [types]"
            )
        }
        do {
            let db = try open()
            let insert = try insertStatement(for: type, in: db)
            var binder = binders[type.name] ?? ArchiveRowBinder(type: type, ownerField: ownerField)
            defer { binders[type.name] = binder }
            var rejected: [RecordRejection] = []
            let stored = try db.transaction { () throws -> Int in
                var stored = 0
                try batch.forEachRecord { index, line in
                    guard binder.bind(line, to: insert) else { throw ArchiveRecordError(index: index) }
                    do {
                        try insert.run()
                    } catch let error as EdgeIngestError where error.code == .invalidRecord {
                        // Only this statement was undone; the transaction goes on.
                        rejected.append(
                            RecordRejection(index: index, reason: "the archive refused it: \(error.message)")
                        )
                        return
                    }
                    if db.changes == 1 { stored += 1 }  // else a duplicate `_id`
                }
                return stored
            }
            storedCount += stored
            duplicateCount += batch.recordCount - stored - rejected.count
            return .stored(rejected: rejected)
        } catch let error as ArchiveKeyMismatch {
            close()
            return .hold(reason: error.message)
        } catch let error as ArchiveRecordError {
            return .badBatch(reason: "record \(error.index) of the batch is not a JSON object with an _id")
        } catch let error as EdgeIngestError {
            close()
            if error.code == .queueCorrupt { return .hold(reason: error.message) }
            return .retry(reason: error.message, retryAfterSeconds: nil)
        } catch {
            close()
            return .retry(reason: "\(error)", retryAfterSeconds: nil)
        }
    }

    private struct ArchiveRecordError: Error { let index: Int }
    private struct ArchiveKeyMismatch: Error { let message: String }

    private func open() throws -> SQLiteConnection {
        if let connection { return connection }
        let db = try SQLiteConnection(path: path, displayName: path, role: "archive")
        try db.execute("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL")
        connection = db
        return db
    }

    private func close() {
        inserts = [:]
        connection = nil
    }

    /// Creates or widens the type's table and prepares its insert, which
    /// takes the `_id` (parameter 1) and each declared field k (parameter
    /// k + 2) as ``ArchiveRowBinder`` binds them; a duplicate inserts nothing.
    private func insertStatement(for type: RecordType, in db: SQLiteConnection) throws -> SQLiteStatement {
        if let prepared = inserts[type.name] { return prepared }
        let table = sqlIdentifier(type.name)
        // RecordType.fields never holds _id: it is every record's primary key.
        let owner = ownerField.flatMap { name in type.fields.contains { $0.name == name } ? name : nil }
        let key = (owner.map { [$0] } ?? []) + [RecordType.primaryKey]
        let definitions =
            ["\"_id\" TEXT NOT NULL"]
            + type.fields.map {
                "\(sqlIdentifier($0.name)) \(Self.columnType($0.type))\($0.name == owner ? " NOT NULL" : "")"
            }
            + ["PRIMARY KEY (\(key.map(sqlIdentifier).joined(separator: ", ")))"]
        try db.execute("CREATE TABLE IF NOT EXISTS \(table) (\(definitions.joined(separator: ", ")))")
        let keyInfo = try db.prepare("SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk")
        keyInfo.bind(1, type.name)
        var existingKey: [String] = []
        while try keyInfo.step() { existingKey.append(keyInfo.string(0)) }
        guard existingKey == key else {
            throw ArchiveKeyMismatch(
                message:
                    "the archive table \(table) in \(path) is keyed on (\(existingKey.joined(separator: ", "))), not (\(key.joined(separator: ", "))) as owner_field asks: move the archive aside, or copy the table into one with that key"
            )
        }
        var existing = Set<String>()
        let info = try db.prepare("SELECT name FROM pragma_table_info(?)")
        info.bind(1, type.name)
        while try info.step() { existing.insert(info.string(0)) }
        for field in type.fields where !existing.contains(field.name) {
            try db.execute(
                "ALTER TABLE \(table) ADD COLUMN \(sqlIdentifier(field.name)) \(Self.columnType(field.type))"
            )
        }
        let names = ([RecordType.primaryKey] + type.fields.map(\.name))
        let statement = try db.prepare(
            "INSERT INTO \(table) (\(names.map(sqlIdentifier).joined(separator: ", "))) VALUES ("
                + (1...names.count).map { "?\($0)" }.joined(separator: ", ") + ")"
                + " ON CONFLICT(\(key.map(sqlIdentifier).joined(separator: ", "))) DO NOTHING"
        )
        inserts[type.name] = statement
        return statement
    }

    static func columnType(_ type: FieldType) -> String {
        switch type.kind {
        case .int, .bool: return "INTEGER"
        case .double: return "REAL"
        case .string, .timestamp, .objectId: return "TEXT"
        }
    }
}
