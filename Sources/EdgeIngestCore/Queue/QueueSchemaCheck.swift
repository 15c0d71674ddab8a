/// Whether a queue file's tables have the columns this format gives them.
/// A flipped bit in a table's `CREATE` text can leave text SQLite still
/// parses (a column named `sourcE`); every statement on that table then
/// fails as if the program were wrong. Checked when a queue opens, so the
/// file is reported damaged and `ingestd repair` puts the text back
/// (``QueueSalvage``).
enum QueueSchemaCheck {
    /// Each table's column names in the current format, from the
    /// migrations run once on an empty in-memory database.
    static let expected: [String: [String]] = expected(version: QueueFormat.currentVersion)

    /// An empty in-memory database of format `version` (the migrations up
    /// to it): the canonical `CREATE` text of each of its tables.
    static func canonical(version: Int64) -> SQLiteConnection? {
        guard let db = try? SQLiteConnection(path: ":memory:", displayName: "schema") else { return nil }
        do {
            for step in QueueFormat.migrations.prefix(Int(version)) { try db.execute(step) }
        } catch {
            return nil
        }
        return db
    }

    /// Each table's column names in format `version` (3 or later).
    static func expected(version: Int64) -> [String: [String]] {
        guard let db = canonical(version: version) else { return [:] }
        let tables = version < QueueFormat.currentVersion ? Array(QueueFormat.tablesOfFormat3) : QueueFormat.tables
        return (try? columns(in: db, tables: tables)) ?? [:]
    }

    /// The format whose tables `db` has, column for column (the current
    /// one or the one before), or nil: for a file whose header lost its
    /// format number.
    static func inferredVersion(of db: SQLiteConnection) -> Int64? {
        for version in [QueueFormat.currentVersion, QueueFormat.currentVersion - 1] {
            let wanted = expected(version: version)
            guard !wanted.isEmpty, let found = try? columns(in: db, tables: Array(wanted.keys)) else { continue }
            if found == wanted { return version }
        }
        return nil
    }

    /// - Throws: ``EdgeIngestError/Code/queueCorrupt`` naming the first
    ///   table whose columns differ.
    static func check(_ db: SQLiteConnection) throws {
        let found = try columns(in: db, tables: Array(expected.keys))
        for (table, columns) in expected.sorted(by: { $0.key < $1.key }) where found[table] != columns {
            throw EdgeIngestError(
                .queueCorrupt,
                "The queue file '\(db.displayName)' is damaged: the definition of its table \(table) is not this format's (columns \((found[table] ?? []).joined(separator: ", ")), expected \(columns.joined(separator: ", "))). Stop the agent and run `ingestd repair` (it keeps a copy and puts the definition back)."
            )
        }
    }

    private static func columns(in db: SQLiteConnection, tables: [String]) throws -> [String: [String]] {
        let info = try db.prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")
        var out: [String: [String]] = [:]
        for table in tables {
            info.bind(1, table)
            var names: [String] = []
            while try info.step() { names.append(info.string(0)) }
            info.reset()
            out[table] = names
        }
        return out
    }
}
