/// Whether a queue file's tables have the columns this format gives them.
/// A flipped bit in a table's `CREATE` text can leave text SQLite still
/// parses (a column named `sourcE`); every statement on that table then
/// fails as if the program were wrong. Checked when a queue opens, so the
/// file is reported damaged and `ingestd repair` puts the text back
/// (``QueueSalvage``).
enum QueueSchemaCheck {
    /// Each table's column names in the current format, from the
    /// migrations run once on an empty in-memory database.
    static let expected: [String: [String]] = {
        guard let db = try? SQLiteConnection(path: ":memory:", displayName: "schema") else { return [:] }
        do {
            for step in QueueFormat.migrations { try db.execute(step) }
        } catch {
            return [:]
        }
        return
            (try? columns(in: db, tables: ["segments", "counters", "positions", "meta", "dead_letters", "quarantine"]))
            ?? [:]
    }()

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
