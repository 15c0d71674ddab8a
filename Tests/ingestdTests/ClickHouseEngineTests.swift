import Foundation
import TestSupport
import Testing

/// `upload.sink = "clickhouse"` through the built binary into a real
/// ClickHouse (Debian 12's 18.16, started by the test), into the table
/// docs/SINKS.md shows, made from the docs' own SQL. The fake with newer
/// servers' wording: ClickHouseSinkTests.
@Suite struct ClickHouseEngineTests {
    static let enabled = serverTestsEnabled(ClickHouseServer.executable)

    /// A server with the docs' `telemetry.weather` table.
    static func server() throws -> ClickHouseServer {
        let server = try ClickHouseServer()
        for statement in try SinksDocSQLTests.clickHouseStatements() { try server.query(statement) }
        return server
    }

    static func fixture(_ server: ClickHouseServer, _ extra: String = "") throws -> AgentFixture {
        try AgentFixture(
            """

            [upload]
            sink = "clickhouse"
            url = "\(server.url)"
            database = "telemetry"
            table = "weather"
            gzip = true
            max_records = 400
            linger_ms = 20
            retry_base_ms = 20
            retry_cap_ms = 200
            \(extra)
            """,
            inputs: "[[inputs]]\nkind = \"stdin\"\n"
        )
    }

    /// `n` readings with fixed `_id`s (the same records each time), and the
    /// rows they must become: `_id`, deviceId, temperature, pressure, wind.
    static func readings(_ n: Int) -> (text: String, rows: [String]) {
        var text = ""
        var rows: [String] = []
        for i in 0..<n {
            let id = "65a1b2c3d4e5f607" + String(i, radix: 16).leftPadded(8)
            let (temperature, pressure, wind) = (40.25 + Double(i) * 0.5, 29.5 + Double(i % 7) * 0.125, i % 40)
            text +=
                #"{"_id":"\#(id)","deviceId":"C\#(i)","temperatureInFahrenheit":\#(temperature),"barometricPressureInHg":\#(pressure),"windSpeedInMph":\#(wind)}"#
                + "\n"
            rows.append("\(id)\tC\(i)\t\(temperature)\t\(pressure)\t\(wind)")
        }
        return (text, rows)
    }

    /// The table's rows as `readings` spells them, deduplicated by `FINAL`.
    static func storedRows(_ server: ClickHouseServer) throws -> [String] {
        try server.query(
            "SELECT _id, deviceId, temperatureInFahrenheit, barometricPressureInHg, windSpeedInMph FROM telemetry.weather FINAL ORDER BY _id"
        ).split(separator: "\n").map { line in
            // ClickHouse prints 41 for 41.0; the readings spell it 41.0.
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard columns.count == 5, let t = Double(columns[2]), let p = Double(columns[3]) else {
                return String(line)
            }
            return [columns[0], columns[1], "\(t)", "\(p)", columns[4]].joined(separator: "\t")
        }
    }

    @Test(.enabled(if: enabled, "needs clickhouse-server")) func readingsSentTwiceAreStoredOnceWithTheirValues() throws
    {
        let server = try Self.server()
        let fixture = try Self.fixture(server, "deduplication_token = false")
        let n = 2000
        let (text, rows) = Self.readings(n)
        let first = try fixture.run(["run"], stdin: Data(text.utf8))
        #expect(first.status == 0, "\(first.stderr.suffix(2000))")
        #expect(first.stderr.contains("ClickHouse \(server.url)"), "\(first.stderr.suffix(2000))")
        let status = try fixture.status()
        #expect(status["uploaded_total"] as? Int == n)
        #expect(status["queued_records"] as? Int == 0)
        // The same records again: a re-send, as after a kill -9 before the queue's delete.
        let second = try fixture.run(["run"], stdin: Data(text.utf8))
        #expect(second.status == 0, "\(second.stderr.suffix(2000))")
        #expect(try fixture.status()["dead_letter_records"] as? Int == 0)
        let stored = try Self.storedRows(server)
        let difference = difference(stored: stored, expected: rows)
        #expect(difference.isEmpty, "rows with FINAL on ClickHouse \(server.version): \(difference)")
        // What docs/SINKS.md says of 18.16: no insert deduplication, so the
        // re-sent rows are there until a merge replaces them.
        let raw = try #require(Int(try server.query("SELECT count() FROM telemetry.weather")))
        #expect((n...2 * n).contains(raw), "\(raw) rows before merges")
        try server.query("OPTIMIZE TABLE telemetry.weather FINAL")
        #expect(try server.query("SELECT count(), uniqExact(_id) FROM telemetry.weather") == "\(n)\t\(n)")
    }

    @Test(.enabled(if: enabled, "needs clickhouse-server")) func theDefaultDeduplicationTokenHoldsOn18WithTheFix()
        throws
    {
        let server = try Self.server()
        let fixture = try Self.fixture(server, "shutdown_timeout_ms = 500")
        // stdin stays open: the agent runs until the hold is logged (a drain on stop does not wait for it).
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(Self.readings(50).text)
        let held = eventually(timeout: 20) { agent.stderr.contains("ClickHouse code 115") }
        let result = (status: agent.terminate(), stderr: agent.stderr)
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        // ClickHouse before 22.2 refuses the setting: the queue holds, and says how to go on.
        #expect(held, "\(result.stderr.suffix(2000))")
        #expect(result.stderr.contains("upload.deduplication_token = false"), "\(result.stderr.suffix(2000))")
        #expect(try server.query("SELECT count() FROM telemetry.weather") == "0")
        let status = try fixture.status()
        #expect(status["queued_records"] as? Int == 50)
        #expect(status["dead_letter_records"] as? Int == 0)
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
