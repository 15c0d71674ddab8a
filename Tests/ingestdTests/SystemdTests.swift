import Foundation
import Testing

@Suite(.serialized) struct SystemdTests {
    @Test func notifySocketGetsReadyStatusWatchdogAndStopping() async throws {
        let fixture = try AgentFixture()
        let socket = try NotifySocket(path: fixture.dir.file("notify.sock"))
        var environment = IngestdBinary.environment
        environment["NOTIFY_SOCKET"] = socket.path
        environment["WATCHDOG_USEC"] = "400000"  // ping every 200 ms
        environment.removeValue(forKey: "WATCHDOG_PID")
        let agent = try RunningAgent(arguments: ["run", "--config", fixture.configPath], environment: environment)

        let started = socket.collect(timeout: 10) { messages in
            messages.contains("READY=1") && messages.contains("WATCHDOG=1")
                && messages.contains { $0.hasPrefix("STATUS=") }
        }
        #expect(started.first == "READY=1", "\(started)")
        #expect(started.contains("WATCHDOG=1"))
        #expect(started.contains { $0.hasPrefix("STATUS=idle, 0 queued") }, "\(started)")

        // STATUS= follows the counters.
        agent.write(reading(7) + "\n")
        let updated = socket.collect(timeout: 10) {
            $0.contains { $0.hasPrefix("STATUS=") && $0.contains("1 accepted") }
        }
        #expect(updated.contains { $0.hasPrefix("STATUS=idle, 1 queued") && $0.contains("1 accepted") }, "\(updated)")

        // Watchdog pings keep coming at about half the interval while healthy.
        let pings = socket.collect(timeout: 1.0) { _ in false }.filter { $0 == "WATCHDOG=1" }
        #expect(pings.count >= 3, "\(pings.count) pings in 1 s with WatchdogSec=0.4s")

        let status = agent.terminate()
        #expect(status == 0, "\(agent.stderr)")
        let stopping = socket.collect(timeout: 2) { $0.contains("STOPPING=1") }
        #expect(stopping.contains("STOPPING=1"))
        #expect(try fixture.queuedLines().count == 1)
    }

    static var canRunJournald: Bool {
        getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/lib/systemd/systemd-journald")
    }

    @Test(.enabled(if: canRunJournald, "needs root and /lib/systemd/systemd-journald"))
    func journalEntriesCarryPriorityAndIngestFields() throws {
        let journald = try Journald.startIfNeeded()
        defer { journald?.stop() }
        let name = "journal-test-\(UUID().uuidString.prefix(8))"
        let fixture = try AgentFixture(inputs: "[[inputs]]\nkind = \"stdin\"\nname = \"\(name)\"\n")
        let input =
            reading(1) + "\n"
            + #"{"deviceId":"WX","windSpeedInMph":"fast","temperatureInFahrenheit":1,"barometricPressureInHg":2}"#
            + "\n"
        let result = try fixture.run(["run", "--log-target", "journal"], stdin: Data(input.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains("Rejected"), "with --log-target journal nothing is logged to stderr")

        let entries = try Journald.entries(matching: "INGEST_INPUT=\(name)", expecting: 2)
        // The message itself says which line, why and what: the journal's default view shows it all.
        let rejected = try #require(
            entries.first {
                $0["MESSAGE"] as? String
                    == #"Rejected line 2 of \#(name): type_mismatch: field 'windSpeedInMph' must be an integer, got "fast""#
            }
        )
        #expect(rejected["PRIORITY"] as? String == "4")
        #expect(rejected["SYSLOG_IDENTIFIER"] as? String == "ingestd")
        #expect(rejected["INGEST_LINE"] as? String == "2")
        #expect(rejected["INGEST_REASON"] as? String == "type_mismatch")
        #expect(rejected["INGEST_DETAIL"] as? String == #"field 'windSpeedInMph' must be an integer, got "fast""#)
        #expect((rejected["CODE_FILE"] as? String)?.hasSuffix("RejectionLog.swift") == true)
        #expect(rejected["CODE_LINE"] is String, "CODE_LINE must appear exactly once")
        #expect(rejected["CODE_FUNC"] is String)
        let reading = try #require(entries.first { $0["MESSAGE"] as? String == "Reading stdin" })
        #expect(reading["PRIORITY"] as? String == "6")
        // The closing stats entry carries the counters as fields.
        let stats = try Journald.entries(matching: "INGEST_STATE=stopped", expecting: 1).filter {
            $0["_PID"] as? String == rejected["_PID"] as? String
        }
        let last = try #require(stats.last)
        #expect(last["INGEST_ACCEPTED"] as? String == "1")
        #expect(last["INGEST_REJECTED"] as? String == "1")
        #expect(last["INGEST_REJECTED_TYPE_MISMATCH"] as? String == "1")
    }

    /// A flood of bad lines: the first ten of a reason are logged one by
    /// one, the rest as one summary, so journald's own rate limit never
    /// drops what matters; every line is still counted.
    @Test(.enabled(if: canRunJournald, "needs root and /lib/systemd/systemd-journald"))
    func aFloodOfRejectionsIsSummarizedInTheJournal() throws {
        let journald = try Journald.startIfNeeded()
        defer { journald?.stop() }
        let name = "flood-\(UUID().uuidString.prefix(8))"
        let fixture = try AgentFixture(inputs: "[[inputs]]\nkind = \"stdin\"\nname = \"\(name)\"\n")
        let input = (1...5_000).map { $0 % 1000 == 0 ? reading($0) : "{not json \($0)" }.joined(separator: "\n") + "\n"
        let result = try fixture.run(["run", "--log-target", "journal"], stdin: Data(input.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let entries = try Journald.entries(matching: "INGEST_INPUT=\(name) INGEST_REASON=malformed_json", expecting: 11)
        let messages = entries.compactMap { $0["MESSAGE"] as? String }
        let oneByOne = messages.filter { $0.hasPrefix("Rejected line ") }
        #expect(oneByOne.count == 10, "\(messages.count) entries")
        #expect(oneByOne.first?.hasPrefix("Rejected line 1 of \(name): malformed_json: ") == true)
        let summaries = messages.filter { $0.hasPrefix("… and ") }
        #expect(summaries.count == 1)
        #expect(
            summaries.first?.hasPrefix("… and 4,985 more malformed_json rejections from \(name) in the last ") == true
        )
        #expect(try fixture.status()["rejected_total"] as? Int == 4_995)
    }
}

extension SystemdTests {
    /// Runs the agent with stderr going to a file and JOURNAL_STREAM naming
    /// `streamOf`'s device:inode (what systemd sets when stderr is the journal).
    static func runWithJournalStream(_ fixture: AgentFixture, streamOf: (String) -> String) throws -> String {
        let errPath = fixture.dir.file("stderr.log")
        FileManager.default.createFile(atPath: errPath, contents: nil)
        var info = stat()
        stat(streamOf(errPath), &info)
        var environment = IngestdBinary.environment
        environment["JOURNAL_STREAM"] = "\(info.st_dev):\(info.st_ino)"
        let process = Process()
        process.executableURL = IngestdBinary.url
        process.arguments = ["run", "--config", fixture.configPath, "--log-target", "auto"]
        process.environment = environment
        process.standardInput = FileHandle(forReadingAtPath: "/dev/null")
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        try process.run()
        process.waitUntilExit()
        return try String(contentsOfFile: errPath, encoding: .utf8)
    }

    @Test(.enabled(if: canRunJournald, "needs root and /lib/systemd/systemd-journald"))
    func whenStderrIsTheJournalLogsGoToTheJournalByThemselves() throws {
        let journald = try Journald.startIfNeeded()
        defer { journald?.stop() }
        let name = "stream-test-\(UUID().uuidString.prefix(8))"
        let fixture = try AgentFixture(inputs: "[[inputs]]\nkind = \"stdin\"\nname = \"\(name)\"\n")
        let stderr = try Self.runWithJournalStream(fixture) { $0 }
        #expect(!stderr.contains("Reading stdin"), "with stderr being the journal, entries go through sd_journal_sendv")
        #expect(
            try Journald.entries(matching: "INGEST_INPUT=\(name)", expecting: 1).contains {
                $0["MESSAGE"] as? String == "Reading stdin"
            }
        )

        // JOURNAL_STREAM naming another file: stderr is not the journal.
        let other = try AgentFixture(inputs: "[[inputs]]\nkind = \"stdin\"\nname = \"\(name)-plain\"\n")
        let plain = try Self.runWithJournalStream(other) { _ in "/dev/null" }
        #expect(plain.contains("Reading stdin"))
    }
}

extension SystemdTests {
    /// An agent that cannot start says why once in the journal, in the
    /// entry's MESSAGE (what `journalctl -u ingestd` shows): under a unit
    /// its stderr is the journal, so no second copy goes there.
    @Test(.enabled(if: canRunJournald, "needs root and /lib/systemd/systemd-journald"))
    func aFatalErrorIsInTheJournalOnceWithItsReason() throws {
        let journald = try Journald.startIfNeeded()
        defer { journald?.stop() }
        let missing = "/proc/no-such-\(UUID().uuidString.prefix(8))"
        let fixture = try AgentFixture(queue: "path = \"\(missing)/queue.sqlite\"\n")
        let stderr = try Self.runWithJournalStream(fixture) { $0 }
        #expect(!stderr.contains(missing), "stderr is the journal: no second copy\n\(stderr)")
        let entries = try Journald.entries(matching: "PRIORITY=2 SYSLOG_IDENTIFIER=ingestd", expecting: 1).filter {
            ($0["MESSAGE"] as? String)?.contains(missing) == true
        }
        #expect(entries.count == 1, "\(entries)")
        #expect(
            (entries.first?["MESSAGE"] as? String)?.hasPrefix(
                "ingestd stopped on an error: Cannot create the directory '\(missing)'"
            ) == true
        )
    }
}

/// A real systemd-journald, started standalone when none is running.
final class Journald {
    let process: Process

    init(process: Process) { self.process = process }

    static func startIfNeeded() throws -> Journald? {
        if FileManager.default.fileExists(atPath: "/run/systemd/journal/socket"), isListening() { return nil }
        try FileManager.default.createDirectory(atPath: "/run/systemd/journal", withIntermediateDirectories: true)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/lib/systemd/systemd-journald")
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<100 where !isListening() { usleep(50_000) }
        return Journald(process: process)
    }

    /// Whether something accepts datagrams on the journal socket.
    static func isListening() -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in "/run/systemd/journal/socket".utf8.enumerated() { raw[i] = b }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        } == 0
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }

    /// Entries matching a journalctl match, read back as JSON (retrying
    /// briefly: journald writes asynchronously).
    static func entries(matching match: String, expecting count: Int) throws -> [[String: Any]] {
        var entries: [[String: Any]] = []
        for _ in 0..<50 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/journalctl")
            // Several matches (space-separated, of different fields) must all hold.
            var arguments = ["-o", "json", "--no-pager"] + match.split(separator: " ").map(String.init)
            for dir in ["/run/log/journal", "/var/log/journal"] where FileManager.default.fileExists(atPath: dir) {
                arguments = ["-D", dir] + arguments
                break
            }
            process.arguments = arguments
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            let data = out.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            entries = String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
            }
            if entries.count >= count { break }
            usleep(100_000)
        }
        return entries
    }
}
