/// The embedded default backend: every confirmed record lands in a plain
/// SQLite table named after its record type, one column per declared field
/// plus `_id` as the primary key. Inserts are `INSERT OR IGNORE`, so a batch
/// sent again after a crash is stored once: exactly once per `_id`.
///
/// The archive commits (WAL, `synchronous=FULL`) before the uploader deletes
/// the records from the queue, so a power cut loses nothing in between.
/// Tables are created on first use; a field added to a type later becomes
/// a new column (`ALTER TABLE … ADD COLUMN`), older rows hold NULL there.
///
/// ```toml
/// [upload]
/// sink = "sqlite"
/// path = "/var/lib/ingestd/archive.sqlite"
/// ```
///
/// | field type | column |
/// | --- | --- |
/// | string, timestamp (ISO 8601 UTC text), objectId (hex) | TEXT |
/// | int, bool (0/1) | INTEGER |
/// | double | REAL |
package final class SQLiteArchiveSink: BatchSink {
    let path: String
    let types: [String: RecordType]
    private var connection: SQLiteConnection?
    /// Prepared inserts per type name, for the open connection.
    private var inserts: [String: (statement: SQLiteStatement, columns: [String])] = [:]

    /// Records stored and `_id`s already present, since this sink was made.
    package private(set) var storedCount = 0
    package private(set) var duplicateCount = 0

    package init(path: String, types: [RecordType]) {
        self.path = path
        self.types = Dictionary(types.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    package var description: String { "SQLite archive \(path)" }

    package func deliver(_ batch: SinkBatch) -> UploadOutcome {
        guard let type = types[batch.type] else {
            return .hold(reason: "the SQLite archive has no declaration of record type '\(batch.type)': declare it under [types]")
        }
        var rows: [[String: RawFieldValue]] = []
        rows.reserveCapacity(batch.recordCount)
        var start = batch.payload.startIndex
        while start < batch.payload.endIndex {
            let end = batch.payload[start...].firstIndex(of: UInt8(ascii: "\n")) ?? batch.payload.endIndex
            guard let values = try? batch.payload[start..<end].withUnsafeBytes({ try StoredRecordDecoder.decode($0) }) else {
                return .badBatch(reason: "record \(rows.count) of the batch is not a flat JSON object")
            }
            rows.append(values)
            start = end + 1
        }
        do {
            let db = try open()
            let insert = try insertStatement(for: type, in: db)
            let (stored, duplicates) = try db.transaction { () throws -> (Int, Int) in
                var stored = 0
                for (index, row) in rows.enumerated() {
                    guard case .string(let id)? = row[RecordType.primaryKey] else {
                        throw ArchiveRecordError(index: index)
                    }
                    insert.statement.bind(1, id)
                    for (offset, column) in insert.columns.enumerated() {
                        bind(row[column] ?? .null, at: Int32(offset + 2), of: insert.statement)
                    }
                    try insert.statement.run()
                    stored += db.changes
                }
                return (stored, rows.count - stored)
            }
            storedCount += stored
            duplicateCount += duplicates
            return .stored(rejected: [])
        } catch let error as ArchiveRecordError {
            return .badBatch(reason: "record \(error.index) of the batch has no _id")
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

    private func bind(_ value: RawFieldValue, at index: Int32, of statement: SQLiteStatement) {
        switch value {
        case .null, .unsupported: statement.bindNull(index)
        case .bool(let b): statement.bind(index, b ? 1 : 0)
        case .int(let i): statement.bind(index, i)
        case .double(let d): statement.bind(index, double: d)
        case .string(let s), .text(let s): statement.bind(index, s)
        case .objectId(let id): statement.bind(index, id.hexString)
        case .timestamp(let ms): statement.bind(index, ms)
        }
    }

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

    /// Creates or widens the type's table and prepares its insert.
    private func insertStatement(for type: RecordType, in db: SQLiteConnection) throws -> (statement: SQLiteStatement, columns: [String]) {
        if let prepared = inserts[type.name] { return prepared }
        let table = Self.quoted(type.name)
        let columns = type.fields.map(\.name).filter { $0 != RecordType.primaryKey }
        let definitions = ["\"_id\" TEXT PRIMARY KEY NOT NULL"] + type.fields.filter { $0.name != RecordType.primaryKey }.map {
            "\(Self.quoted($0.name)) \(Self.columnType($0.type))"
        }
        try db.execute("CREATE TABLE IF NOT EXISTS \(table) (\(definitions.joined(separator: ", ")))")
        var existing = Set<String>()
        let info = try db.prepare("SELECT name FROM pragma_table_info(?)")
        info.bind(1, type.name)
        while try info.step() { existing.insert(info.string(0)) }
        for field in type.fields where field.name != RecordType.primaryKey && !existing.contains(field.name) {
            try db.execute("ALTER TABLE \(table) ADD COLUMN \(Self.quoted(field.name)) \(Self.columnType(field.type))")
        }
        let names = (["_id"] + columns).map(Self.quoted).joined(separator: ", ")
        let marks = Array(repeating: "?", count: columns.count + 1).joined(separator: ", ")
        let statement = try db.prepare("INSERT OR IGNORE INTO \(table) (\(names)) VALUES (\(marks))")
        inserts[type.name] = (statement, columns)
        return (statement, columns)
    }

    /// An SQL identifier in double quotes, inner quotes doubled.
    static func quoted(_ name: String) -> String {
        "\"" + name.split(separator: "\"", omittingEmptySubsequences: false).joined(separator: "\"\"") + "\""
    }

    static func columnType(_ type: FieldType) -> String {
        switch type.kind {
        case .int, .bool: return "INTEGER"
        case .double: return "REAL"
        case .string, .timestamp, .objectId: return "TEXT"
        }
    }
}
