import Foundation
import TestSupport
import Testing

/// Every SQL block in docs/SINKS.md runs, as written, on the engine the
/// tests install (Debian 12's: scripts/debian-test-packages.txt), so an
/// operator who copies it gets a table, not an error (issue 27: the
/// ClickHouse table's `non_replicated_deduplication_window` was refused by
/// ClickHouse 18.16). The blocks are read from the file, so the docs and
/// this test cannot drift apart.
@Suite struct SinksDocSQLTests {
    /// One ```sql block: the `## ` section it is in, its statements.
    struct Block {
        var section: String
        var line: Int
        var statements: [String]
    }

    /// The ```sql blocks of docs/SINKS.md, each split into statements at
    /// the `;` that ends a line (ClickHouse's HTTP interface takes one
    /// statement per request).
    static func sqlBlocks() throws -> [Block] {
        let path = repositoryRoot.appendingPathComponent("docs/SINKS.md").path
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(
            separator: "\n",
            omittingEmptySubsequences: false
        )
        var blocks: [Block] = []
        var section = ""
        var current: Block?
        var statement = ""
        for (index, line) in lines.enumerated() {
            if current == nil {
                if line.hasPrefix("## ") { section = String(line.dropFirst(3)) }
                if line.trimmingCharacters(in: .whitespaces) == "```sql" {
                    current = Block(section: section, line: index + 1, statements: [])
                }
                continue
            }
            if line.trimmingCharacters(in: .whitespaces) == "```" {
                if !statement.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                    current?.statements.append(statement)
                }
                blocks.append(current!)
                current = nil
                statement = ""
                continue
            }
            statement += line + "\n"
            if line.trimmingCharacters(in: .whitespaces).hasSuffix(";") {
                current?.statements.append(statement.trimmingCharacters(in: .whitespacesAndNewlines))
                statement = ""
            }
        }
        return blocks
    }

    /// The SQL blocks of the docs' ClickHouse section (the table the
    /// ClickHouse engine tests insert into).
    static func clickHouseStatements() throws -> [String] {
        try sqlBlocks().filter { $0.section.contains("`clickhouse`") }.flatMap(\.statements)
    }

    @Test func theDocsShowSQLOnlyWhereAnEngineCanRunIt() throws {
        let blocks = try Self.sqlBlocks()
        #expect(!blocks.isEmpty, "docs/SINKS.md has no ```sql block: did the parser or the docs change?")
        for block in blocks {
            #expect(
                block.section.contains("`clickhouse`") || block.section.contains("`postgresql`"),
                "docs/SINKS.md line \(block.line): a SQL block in section '\(block.section)', which no engine test runs: give it one here"
            )
            #expect(!block.statements.isEmpty, "docs/SINKS.md line \(block.line): an empty SQL block")
        }
    }

    @Test(.enabled(if: serverTestsEnabled(ClickHouseServer.executable), "needs clickhouse-server"))
    func everyClickHouseStatementRunsOnTheInstalledClickHouse() throws {
        let statements = try Self.clickHouseStatements()
        #expect(!statements.isEmpty, "docs/SINKS.md's clickhouse section shows no table")
        let server = try ClickHouseServer()
        for statement in statements {
            #expect(
                throws: Never.self,
                "docs/SINKS.md on ClickHouse \(server.version): \(statement)"
            ) { try server.query(statement) }
        }
        // What the docs promise: the table the sink inserts into, with `_id` and the fields.
        #expect(
            try server.query("SELECT name, type FROM system.columns WHERE database = 'telemetry' AND table = 'weather'")
                == """
                _id\tString
                deviceId\tString
                temperatureInFahrenheit\tFloat64
                barometricPressureInHg\tFloat64
                windSpeedInMph\tInt64
                """
        )
        #expect(
            try server.query("SELECT engine, sorting_key FROM system.tables WHERE name = 'weather'")
                == "ReplacingMergeTree\t_id",
            "the docs' deduplication story relies on a ReplacingMergeTree ordered by _id"
        )
        // As written, they run again without an error (IF NOT EXISTS).
        for statement in statements { try server.query(statement) }
    }

    @Test func everyPostgreSQLStatementRunsOnTheInstalledPostgreSQL() throws {
        let statements = try Self.sqlBlocks().filter { $0.section.contains("`postgresql`") }.flatMap(\.statements)
        // The PostgreSQL section shows none today (the sink makes its tables):
        // said, not skipped in silence. Once one is added, it runs below.
        guard !statements.isEmpty else {
            #expect(
                try Self.sqlBlocks().contains { $0.section.contains("`clickhouse`") },
                "the doc's SQL is found at all"
            )
            return
        }
        let server = try PostgresServer()
        for statement in statements {
            #expect(throws: Never.self, "docs/SINKS.md on PostgreSQL: \(statement)") { try server.psql(statement) }
        }
    }
}
