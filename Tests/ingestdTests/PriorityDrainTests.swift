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
}
