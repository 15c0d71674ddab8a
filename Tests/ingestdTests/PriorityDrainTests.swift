import Foundation
import TestSupport
import Testing

/// After an outage, through the built binary (docs/QUEUE.md, "Priority and
/// age"): a backlog of routine readings is queued while there is no sink;
/// an alarm comes last; when the sink is there, the alarm arrives first.
/// The SQLite archive records the order of arrival itself (a trigger per
/// table writes to one sequence).
@Suite(.serialized) struct PriorityDrainTests {
    static let types = """
        [types.Reading]
        deviceId = "string"
        n = "int"

        [types.Alarm]
        deviceId = "string"
        level = "int"

        [delivery.Alarm]
        priority = 10
        """

    @Test func anAlarmQueuedBehindABacklogArrivesFirst() throws {
        let probe = try TemporaryDirectory()
        let archive = probe.file("archive.sqlite")
        _ = try sqlite3(
            archive,
            """
            CREATE TABLE arrivals(seq INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL);
            CREATE TABLE "Reading"("_id" TEXT NOT NULL, PRIMARY KEY ("_id"));
            CREATE TABLE "Alarm"("_id" TEXT NOT NULL, PRIMARY KEY ("_id"));
            CREATE TRIGGER reading_arrives AFTER INSERT ON "Reading" BEGIN INSERT INTO arrivals(type) VALUES ('Reading'); END;
            CREATE TRIGGER alarm_arrives AFTER INSERT ON "Alarm" BEGIN INSERT INTO arrivals(type) VALUES ('Alarm'); END;
            """
        )
        let fixture = try AgentFixture(inputs: "[[inputs]]\nkind = \"socket\"\n", types: Self.types)
        // The outage: no sink yet.
        let offline = try SocketInputTests.startAgent(fixture)
        let backlog = (0..<20_000).map { #"{"_type":"Reading","deviceId":"R\#($0)","n":\#($0)}"# + "\n" }.joined()
        #expect(try fixture.run(["send"], stdin: Data(backlog.utf8)).status == 0)
        let alarm = #"{"_type":"Alarm","deviceId":"pump-3","level":2}"# + "\n"
        #expect(try fixture.run(["send"], stdin: Data(alarm.utf8)).status == 0)
        #expect(offline.terminate() == 0)

        // The sink is back.
        let text = try String(contentsOfFile: fixture.configPath, encoding: .utf8)
        try (text + "\n[upload]\nsink = \"sqlite\"\npath = \"\(archive)\"\nmax_records = 500\nlinger_ms = 20\n")
            .write(toFile: fixture.configPath, atomically: true, encoding: .utf8)
        let online = try SocketInputTests.startAgent(fixture)
        #expect(eventually(timeout: 60) { (try? sqlite3(archive, "SELECT count(*) FROM arrivals")) == "20001" })
        #expect(online.terminate() == 0)
        #expect(try sqlite3(archive, "SELECT type FROM arrivals ORDER BY seq LIMIT 1") == "Alarm")
        // The backlog after it, in its order, each once.
        #expect(try sqlite3(archive, "SELECT count(DISTINCT _id), min(n), max(n) FROM Reading") == "20000|0|19999")
        #expect(
            try sqlite3(
                archive,
                "SELECT count(*) FROM Reading r JOIN Reading s ON s.rowid = r.rowid + 1 WHERE s.n < r.n"
            )
                == "0"
        )
        let status = try fixture.status()
        #expect(status["uploaded_total"] as? Int == 20_001 && status["queued_records"] as? Int == 0)
    }

    /// A three-day outage told by the clocks, not by waiting: the agent runs
    /// under libfaketime with every clock moved (the boot-time clock too),
    /// +0, then +60 h, then +72 h, in one boot. With `newest_first` the
    /// newest readings arrive first when the sink is back; with a maximum
    /// age of a day exactly the readings from three days before are dropped,
    /// counted as expired.
    @Test(.enabled(if: ClockCorrectionTests.enabled, "needs libfaketime (apt-get install faketime)"))
    func afterAThreeDayOutageTheNewestArriveFirstAndTheTooOldAreCounted() throws {
        let library = try #require(ClockCorrectionTests.library, "libfaketime is missing: apt-get install faketime")
        let probe = try TemporaryDirectory()
        let archive = probe.file("archive.sqlite")
        let fakeTime = probe.file("faketime")
        _ = try sqlite3(
            archive,
            """
            CREATE TABLE arrivals(seq INTEGER PRIMARY KEY AUTOINCREMENT, device TEXT NOT NULL);
            CREATE TABLE "Reading"("_id" TEXT NOT NULL, deviceId TEXT, PRIMARY KEY ("_id"));
            CREATE TRIGGER reading_arrives AFTER INSERT ON "Reading" BEGIN INSERT INTO arrivals(device) VALUES (NEW.deviceId); END;
            """
        )
        let fixture = try AgentFixture(
            "[clock]\nassume_synchronised = true\n",
            inputs: "[[inputs]]\nkind = \"socket\"\n",
            types: """
                [types.Reading]
                deviceId = "string"
                n = "int"

                [delivery.Reading]
                drain_order = "newest_first"
                max_age_s = 86400
                """
        )
        let environment = ClockCorrectionTests.fakedEnvironment(library: library, file: fakeTime, wallClockOnly: false)
        /// Runs the agent at `offset` (libfaketime's "+60h") and sends `devices`.
        func phase(_ offset: String, _ devices: [String]) throws -> RunningAgent {
            try "\(offset)\n".write(toFile: fakeTime, atomically: true, encoding: .utf8)
            let agent = try ClockCorrectionTests.startAgent(fixture, environment: environment)
            if !devices.isEmpty {
                let lines = devices.enumerated().map { #"{"deviceId":"\#($1)","n":\#($0)}"# + "\n" }.joined()
                #expect(try fixture.run(["send"], stdin: Data(lines.utf8)).status == 0)
            }
            return agent
        }
        #expect(try phase("+0", ["A0", "A1", "A2", "A3"]).terminate() == 0)
        #expect(try phase("+60h", ["B0", "B1"]).terminate() == 0)
        #expect(try phase("+72h", ["C0", "C1", "C2"]).terminate() == 0)
        // The sink is back, three days after the first readings.
        let text = try String(contentsOfFile: fixture.configPath, encoding: .utf8)
        try (text + "\n[upload]\nsink = \"sqlite\"\npath = \"\(archive)\"\nlinger_ms = 20\n")
            .write(toFile: fixture.configPath, atomically: true, encoding: .utf8)
        let online = try phase("+72h", [])
        #expect(eventually(timeout: 30) { (try? sqlite3(archive, "SELECT count(*) FROM arrivals")) == "5" })
        usleep(300_000)
        #expect(online.terminate() == 0)
        #expect(
            try sqlite3(archive, "SELECT group_concat(device, ' ') FROM (SELECT device FROM arrivals ORDER BY seq)")
                == "C0 C1 C2 B0 B1"
        )
        let status = try fixture.status()
        #expect((status["dropped_by_reason"] as? [String: Int])?["expired"] == 4, "\(status)")
        #expect(status["uploaded_total"] as? Int == 5 && status["queued_records"] as? Int == 0)
        #expect(status["accepted_total"] as? Int == 9)
    }
}
