import Foundation
import TestSupport
import Testing

/// A box without a real-time clock, through the built binary (docs/QUEUE.md,
/// "Boxes without a real-time clock"): the agent runs under libfaketime
/// (Debian's `faketime` package), its wall clock at 1970 while the
/// boot-time clock runs true; readings are sent; then the clock jumps to
/// the true time and a flag file says it is synchronised
/// (`[clock] synchronised_file`). The test's own clock is the truth.
@Suite(.serialized) struct ClockCorrectionTests {
    /// libfaketime's multi-threaded build, where Debian puts it.
    static let library: String? = {
        let roots = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib")) ?? []
        return roots.map { "/usr/lib/\($0)/faketime/libfaketimeMT.so.1" }
            .first { FileManager.default.fileExists(atPath: $0) }
    }()

    static var enabled: Bool { library != nil || ProcessInfo.processInfo.environment["CI"] == "true" }

    static let types = """
        [types.Held]
        deviceId = "string"
        n = "int"

        [types.Marked]
        deviceId = "string"
        n = "int"

        [delivery.Held]
        accepted_at_field = "accepted_at"
        clock_field = "accepted_clock"
        hold_unsynchronised = true

        [delivery.Marked]
        accepted_at_field = "accepted_at"
        clock_field = "accepted_clock"
        """

    @Test(.enabled(if: enabled, "needs libfaketime (apt-get install faketime)"))
    func readingsAcceptedAt1970LeaveWithTheTrueTimeOnceTheClockIsSynchronised() throws {
        let library = try #require(Self.library, "libfaketime is missing: apt-get install faketime")
        let probe = try TemporaryDirectory()
        let archive = probe.file("archive.sqlite")
        let flag = probe.file("synchronised")
        let fakeTime = probe.file("faketime")
        // The wall clock reads 1970-01-02 (an offset from the true time, in seconds).
        let now = Int64(Date().timeIntervalSince1970)
        try "-\(now - 86_400)\n".write(toFile: fakeTime, atomically: true, encoding: .utf8)
        let fixture = try AgentFixture(
            """
            [clock]
            synchronised_file = "\(flag)"

            [upload]
            sink = "sqlite"
            path = "\(archive)"
            linger_ms = 20
            """,
            inputs: "[[inputs]]\nkind = \"socket\"\n",
            types: Self.types
        )
        let environment = Self.fakedEnvironment(library: library, file: fakeTime, wallClockOnly: true)
        let agent = try Self.startAgent(fixture, environment: environment)

        // Five held readings, one `send` each, timed by the true clock; two
        // bring their own _id.
        var truth: [(from: Int64, to: Int64)] = []
        let ownIDs = ["0000000a0000000000000001", "0000000a0000000000000002"]
        for n in 0..<5 {
            let id = n < 2 ? #""_id":"\#(ownIDs[n])","# : ""
            let line = #"{\#(id)"_type":"Held","deviceId":"H\#(n)","n":\#(n)}"# + "\n"
            let from = Self.trueMilliseconds()
            let sent = try fixture.run(["send"], stdin: Data(line.utf8))
            truth.append((from, Self.trueMilliseconds()))
            #expect(sent.status == 0, "\(sent.stderr)")
            usleep(150_000)
        }
        let marked = (0..<3).map { #"{"_type":"Marked","deviceId":"M\#($0)","n":\#($0)}"# + "\n" }.joined()
        #expect(try fixture.run(["send"], stdin: Data(marked.utf8)).status == 0)

        // Marked readings leave at once, with the wall clock as it read and
        // marked; held ones wait.
        #expect(eventually { (try? sqlite3(archive, "SELECT count(*) FROM Marked")) == "3" })
        #expect(
            try sqlite3(archive, "SELECT DISTINCT accepted_clock, substr(accepted_at, 1, 10) FROM Marked")
                == "unsynchronised|1970-01-02"
        )
        usleep(500_000)
        #expect(try sqlite3(archive, "SELECT count(*) FROM sqlite_master WHERE name = 'Held'") == "0")
        let before = try IngestdBinary.run(
            ["status", "--json", "--config", fixture.configPath],
            environment: environment,
            wrapper: ["/usr/bin/env"]
        )
        #expect(before.stdout.contains(#""clock": "unsynchronised""#), "\(before.stdout)")
        #expect(before.stdout.contains(#""clock_since_boot": true"#), "\(before.stdout)")

        // NTP steps the clock to the true time, then says it is synchronised.
        try "+0\n".write(toFile: fakeTime, atomically: true, encoding: .utf8)
        usleep(300_000)
        FileManager.default.createFile(atPath: flag, contents: nil)
        #expect(eventually { (try? sqlite3(archive, "SELECT count(*) FROM Held")) == "5" })
        let rows = try sqlite3(archive, "SELECT n, _id, accepted_at, accepted_clock FROM Held ORDER BY n")
            .split(separator: "\n").map { $0.split(separator: "|").map(String.init) }
        #expect(rows.count == 5)
        for row in rows where row.count == 4 {
            let n = Int(row[0])!
            #expect(row[3] == "corrected")
            let at = try #require(Self.milliseconds(iso: row[2]), "\(row[2])")
            // Within a few milliseconds of the send that committed it.
            #expect(at >= truth[n].from - 5 && at <= truth[n].to + 5, "\(row[2]) vs \(truth[n])")
            if n < 2 { #expect(row[1] == ownIDs[n]) }
        }
        let after = try fixture.run(["status", "--json"])
        #expect(after.stdout.contains(#""clock": "synchronised""#), "\(after.stdout)")
        #expect(after.stdout.contains(#""clock_jumps_total": 1"#), "\(after.stdout)")
        #expect(agent.terminate() == 0)
        let log = agent.stderr
        #expect(log.contains("clock: unsynchronised since boot"), "\(log.suffix(3000))")
        #expect(log.contains("clock synchronised: jumped +5"), "\(log.suffix(3000))")
        #expect(!log.contains("not making progress"), "\(log.suffix(3000))")
        // Nothing lost, nothing twice.
        #expect(
            try sqlite3(
                archive,
                "SELECT count(DISTINCT _id) FROM (SELECT _id FROM Held UNION ALL SELECT _id FROM Marked)"
            ) == "8"
        )
        let status = try fixture.status()
        #expect(status["uploaded_total"] as? Int == 8 && status["queued_records"] as? Int == 0)
    }

    /// The agent's environment under libfaketime, its offset read from
    /// `file` at every clock read; `wallClockOnly`: the monotonic and
    /// boot-time clocks run true.
    static func fakedEnvironment(library: String, file: String, wallClockOnly: Bool) -> [String: String] {
        var environment = IngestdBinary.environment
        environment["LD_PRELOAD"] = library
        environment["FAKETIME_TIMESTAMP_FILE"] = file
        environment["FAKETIME_NO_CACHE"] = "1"
        if wallClockOnly { environment["DONT_FAKE_MONOTONIC"] = "1" }
        return environment
    }

    /// `ingestd run` of `fixture` under `environment`, once its socket is there.
    static func startAgent(_ fixture: AgentFixture, environment: [String: String]) throws -> RunningAgent {
        // Through env(1), itself under libfaketime: a Swift program whose
        // parent is not sees an empty command line under libfaketime 0.9.10
        // (the `faketime` command avoids it the same way).
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: environment,
            launcher: ["/usr/bin/env"]
        )
        try #require(
            eventually { FileManager.default.fileExists(atPath: fixture.stateDirectory + "/ingestd.sock") },
            "\(agent.stderr.suffix(3000))"
        )
        return agent
    }

    static func trueMilliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// `2026-11-28T16:20:00.123Z` as ms since the epoch.
    static func milliseconds(iso: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: iso).map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }
}
