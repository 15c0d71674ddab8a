import Foundation
import TestSupport
import Testing

/// `upload.sink = "clickhouse"` through the built binary against
/// Tests/Support/clickhouse-fake.py, which answers with ClickHouse's own
/// error wording and statuses. Answers of a real ClickHouse 18.16:
/// ClickHouseRecordedAnswerTests; a real server: scripts/sink-engines.sh.
@Suite(.serialized) struct ClickHouseSinkTests {
    /// The fake on a kernel-chosen loopback port; killed when released.
    final class FakeClickHouse {
        let script: SupportScript
        var url: String { "http://127.0.0.1:\(script.ports[0])/" }

        init(_ arguments: [String] = []) throws { script = try SupportScript("clickhouse-fake.py", arguments) }

        func stats() throws -> [String: Any] { try fetchJSON(url + "stats") }
    }

    static func fixture(_ clickhouse: FakeClickHouse, _ extra: String = "") throws -> AgentFixture {
        try AgentFixture(
            """

            [upload]
            sink = "clickhouse"
            url = "\(clickhouse.url)"
            database = "telemetry"
            table = "weather"
            linger_ms = 20
            retry_base_ms = 20
            retry_cap_ms = 200
            \(extra)
            """
        )
    }

    static func readings(_ n: Int, poison: Int? = nil) -> String {
        (0..<n).map { reading($0 % 40, device: $0 == poison ? "POISON" : "C\($0)") + "\n" }.joined()
    }

    /// Runs the agent with stdin open (so retries happen while it runs),
    /// feeds `text`, waits until `done` holds for the fake's stats, stops it.
    static func stream(
        _ fixture: AgentFixture,
        _ clickhouse: FakeClickHouse,
        _ text: String,
        until done: ([String: Any]) -> Bool
    ) throws -> (status: Int32, stderr: String) {
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(text)
        let reached = eventually(timeout: 30) { done((try? clickhouse.stats()) ?? [:]) }
        let code = agent.terminate()
        #expect(reached, "\(agent.stderr.suffix(2000))")
        return (code, agent.stderr)
    }

    @Test func everyReadingIsInsertedOnceThroughTooManyPartsAndGzip() throws {
        let clickhouse = try FakeClickHouse(["--too-many-parts", "3", "--tables", "telemetry.weather"])
        let fixture = try Self.fixture(clickhouse, "gzip = true\nmax_records = 500")
        let result = try Self.stream(fixture, clickhouse, Self.readings(2500)) { $0["rows"] as? Int == 2500 }
        #expect(result.status == 0, "\(result.stderr)")
        let stats = try clickhouse.stats()
        #expect(stats["rows"] as? Int == 2500)
        #expect(stats["duplicate_ids"] as? Int == 0)
        #expect(stats["queries"] as? [String] == ["INSERT INTO `telemetry`.`weather` FORMAT JSONEachRow"])
        #expect((stats["gzip_bodies"] as? Int ?? 0) >= 5)
        #expect(result.stderr.contains("ClickHouse code 252"), "the retries say why: \(result.stderr.suffix(1500))")
        let status = try fixture.status()
        #expect(status["queued_records"] as? Int == 0)
        #expect(status["uploaded_total"] as? Int == 2500)
        #expect((status["upload_resends"] as? Int ?? 0) >= 3)
    }

    @Test func aRecordClickHouseCannotParseIsIsolatedAndTheRestInserted() throws {
        let clickhouse = try FakeClickHouse(["--poison", "POISON"])
        let fixture = try Self.fixture(clickhouse, "max_records = 1000")
        let result = try Self.stream(fixture, clickhouse, Self.readings(1000, poison: 437)) {
            $0["rows"] as? Int == 999
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try clickhouse.stats()["rows"] as? Int == 999)
        let status = try fixture.status()
        #expect(status["dead_letter_records"] as? Int == 1)
        #expect(status["queued_records"] as? Int == 0)
        #expect(result.stderr.contains("ClickHouse code 27"), "\(result.stderr.suffix(1500))")
    }

    @Test func anUnknownTableHoldsEverythingAndSaysWhy() throws {
        let clickhouse = try FakeClickHouse(["--tables", "telemetry.other"])
        let fixture = try Self.fixture(clickhouse, "shutdown_timeout_ms = 200")
        let result = try Self.stream(fixture, clickhouse, Self.readings(50)) { $0["inserts"] as? Int ?? 0 >= 1 }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("ClickHouse code 60 (unknown table)"), "\(result.stderr.suffix(1500))")
        let stats = try clickhouse.stats()
        #expect(stats["rows"] as? Int == 0)
        #expect(stats["inserts"] as? Int == 1, "held after the first answer, no hammering: \(stats)")
        let status = try fixture.status()
        #expect(status["queued_records"] as? Int == 50)
        #expect(status["dead_letter_records"] as? Int == 0)
    }
}
