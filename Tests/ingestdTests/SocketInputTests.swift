import Foundation
import TestSupport
import Testing

/// `kind = "socket"` and `ingestd send` through the built binary: durable
/// end to end, refusals reported by line, and a sender that exits 0 only
/// once every line is committed — also when the agent is killed.
@Suite(.serialized) struct SocketInputTests {
    static func fixture() throws -> AgentFixture {
        try AgentFixture(inputs: "[[inputs]]\nkind = \"socket\"\n")
    }

    /// Lines 1...n, each with its own device (`S<n>`).
    static func lines(_ range: ClosedRange<Int>) -> String {
        range.map { reading($0 % 40, device: "S\($0)") + "\n" }.joined()
    }

    static func send(_ fixture: AgentFixture, _ input: String, _ extra: [String] = []) throws -> IngestdBinary.Result {
        try fixture.run(["send"] + extra, stdin: Data(input.utf8))
    }

    @Test func everyLineSentIsCommittedAndRefusalsAreReportedByLine() throws {
        let fixture = try Self.fixture()
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        #expect(eventually { FileManager.default.fileExists(atPath: fixture.stateDirectory + "/ingestd.sock") })
        let good = try Self.send(fixture, Self.lines(1...2000))
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.stderr.isEmpty, "\(good.stderr)")
        // send returned 0: the 2000 are committed now, not eventually.
        let stats = try fixture.run(["queue", "stats"])
        #expect(stats.stdout.contains("queued:       2000 readings"), "\(stats.stdout)")

        let mixed = try Self.send(fixture, Self.lines(2001...2002) + "{not json\n" + Self.lines(2003...2003))
        #expect(mixed.status == 65)
        #expect(mixed.stderr.contains("line 3: malformed_json: "), "\(mixed.stderr)")
        #expect(mixed.stderr.contains("1 of 4 lines refused"), "\(mixed.stderr)")
        #expect(agent.terminate() == 0)
        let devices = FileInputTests.devices(try fixture.queuedLines())
        #expect(devices.count == 2003 && Set(devices).count == 2003)
    }

    @Test func aSenderThatCannotReachTheAgentSaysWhereItLooked() throws {
        let fixture = try Self.fixture()
        let result = try Self.send(fixture, Self.lines(1...1))
        #expect(result.status == 74)
        #expect(
            result.stderr.contains("cannot reach the agent at '\(fixture.stateDirectory)/ingestd.sock'"),
            "\(result.stderr)"
        )
    }

    static func startAgent(_ fixture: AgentFixture) throws -> RunningAgent {
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        #expect(eventually { FileManager.default.fileExists(atPath: fixture.stateDirectory + "/ingestd.sock") })
        return agent
    }

    /// `ingestd send` of lines 1...n from a file, in the background; its stderr in a file.
    static func startSend(_ fixture: AgentFixture, lines n: Int, _ extra: [String] = []) throws -> (Process, String) {
        let input = fixture.dir.file("input.ndjson")
        try Self.lines(1...n).write(toFile: input, atomically: true, encoding: .utf8)
        let stderr = fixture.dir.file("send.stderr")
        FileManager.default.createFile(atPath: stderr, contents: nil)
        let send = Process()
        send.executableURL = IngestdBinary.url
        send.arguments = ["send", "--config", fixture.configPath] + extra
        send.environment = IngestdBinary.environment
        send.standardInput = FileHandle(forReadingAtPath: input)
        send.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderr))
        try send.run()
        return (send, stderr)
    }

    static func accepted(_ fixture: AgentFixture) -> Int { (try? fixture.status())?["accepted_total"] as? Int ?? 0 }

    /// Point 2 of issue 38: a sensor pipe outlives reloads and a crash of
    /// the agent, and its lines (without `_id`) are stored exactly once.
    @Test func sendRidesThroughReloadsAndACrashStoringEveryLineOnce() throws {
        let fixture = try Self.fixture()
        var agent = try Self.startAgent(fixture)
        let n = 300_000
        let (send, stderr) = try Self.startSend(fixture, lines: n)
        for (after, signal) in [(5_000, SIGHUP), (40_000, SIGHUP), (80_000, SIGKILL)] {
            #expect(eventually { Self.accepted(fixture) > after })
            kill(agent.process.processIdentifier, signal)
            #expect(send.isRunning, "the signal came before the end of the stream")
        }
        agent.process.waitUntilExit()
        agent = try Self.startAgent(fixture)
        send.waitUntilExit()
        let said = try String(contentsOfFile: stderr, encoding: .utf8)
        #expect(send.terminationStatus == 0, "\(said)")
        #expect(agent.terminate() == 0)
        let devices = FileInputTests.devices(try fixture.queuedLines())
        #expect(devices.count == n, "\(devices.count - Set(devices).count) stored twice")
        #expect(Set(devices) == Set((1...n).map { "S\($0)" }), "every line stored")
    }

    @Test func whenTheAgentStaysAwaySendGivesUpAfterWaitAndEveryLineItConfirmedIsKept() throws {
        let fixture = try Self.fixture()
        let agent = try Self.startAgent(fixture)
        let (send, stderr) = try Self.startSend(fixture, lines: 300_000, ["--wait", "1s"])
        // Kill the agent once it has committed some of the stream, not all.
        #expect(eventually { Self.accepted(fixture) > 5_000 })
        kill(agent.process.processIdentifier, SIGKILL)
        agent.process.waitUntilExit()
        send.waitUntilExit()
        let said = try String(contentsOfFile: stderr, encoding: .utf8)
        #expect(send.terminationStatus == 75, "\(said)")
        #expect(said.contains("did not come back within 1 s (--wait)"), "\(said)")
        let confirmed = try #require(
            said.range(of: #"the agent confirmed (\d+) lines"#, options: .regularExpression).flatMap {
                Int(said[$0].split(separator: " ")[3])
            },
            "\(said)"
        )
        #expect(confirmed > 0 && confirmed < 300_000, "the kill came after some commits and before the end")
        // Every line send was told is committed is in the queue.
        let devices = Set(FileInputTests.devices(try fixture.queuedLines()))
        let missing = (1...max(1, confirmed)).filter { confirmed > 0 && !devices.contains("S\($0)") }
        #expect(missing.isEmpty, "\(missing.count) confirmed lines missing, e.g. \(missing.prefix(5))")
    }

    @Test func aFrozenAgentEndsSendAfterTimeoutWithItsOwnExitCode() throws {
        let fixture = try Self.fixture()
        let agent = try Self.startAgent(fixture)
        kill(agent.process.processIdentifier, SIGSTOP)
        defer {
            kill(agent.process.processIdentifier, SIGCONT)
            _ = agent.terminate()
        }
        let started = Date()
        let result = try Self.send(fixture, Self.lines(1...10), ["--timeout", "2s"])
        #expect(result.status == 69, "\(result.stderr)")
        #expect(
            result.stderr.contains("has confirmed nothing for 2 s (frozen? stopped with SIGSTOP?"),
            "\(result.stderr)"
        )
        #expect(Date().timeIntervalSince(started) < 30, "send ended by its --timeout, not by anything else")
    }

    /// A flood of bad lines from a sender is logged as the first few and one
    /// summary, however many chunks it arrives in (each chunk is committed
    /// and answered; each used to end the log's window: 10 lines and a
    /// summary per chunk).
    @Test func aFloodOfBadLinesFromASenderIsSummarized() throws {
        let fixture = try Self.fixture()
        let agent = try Self.startAgent(fixture)
        let bad = (1...20_000).map { "{not json \($0)\n" }.joined()
        let result = try Self.send(fixture, bad)
        #expect(result.status == 65)
        #expect(agent.terminate() == 0)
        let log = agent.stderr.split(separator: "\n")
        let lines = log.filter { $0.contains("Rejected line") }
        let summaries = log.filter { $0.contains("more malformed_json rejections from") }
        #expect(lines.count == 10, "\(lines.count) lines logged one by one")
        #expect(summaries.count == 1, "\(summaries)")
        #expect(summaries.first?.contains("19,990 more") == true, "\(summaries)")
    }

    /// A reload keeps a session's connection: what the sender writes
    /// before, during and after it is committed on the same connection,
    /// which is never told to reconnect.
    @Test func aReloadKeepsASendersConnection() throws {
        let fixture = try Self.fixture()
        let agent = try Self.startAgent(fixture)
        let client = try SocketClient.opened(fixture.stateDirectory + "/ingestd.sock")
        defer { close(client) }
        var answers = ""
        SocketClient.write(client, "EDGEINGEST-SEND 1 session=kept-across-a-reload-1\n" + Self.lines(1...3))
        #expect(SocketClient.answers(client, until: { $0.contains("COMMITTED 3 ") }, into: &answers), "\(answers)")
        kill(agent.process.processIdentifier, SIGHUP)
        SocketClient.write(client, Self.lines(4...5) + String(Self.lines(6...6).dropLast()))  // line 6 unfinished
        #expect(eventually { agent.stderr.components(separatedBy: "ingestd is ready").count == 3 }, "\(agent.stderr)")
        SocketClient.write(client, "\n" + Self.lines(7...8))
        shutdown(client, Int32(SHUT_WR))
        #expect(SocketClient.answers(client, until: { $0.contains("DONE ") }, into: &answers), "\(answers)")
        #expect(answers.contains("DONE 8 0"), "\(answers)")
        #expect(!answers.contains("RETRY") && !answers.contains("ERROR"), "\(answers)")
        #expect(agent.terminate() == 0)
        #expect(agent.stderr.contains("Restarting the services with the new configuration"))
        let devices = FileInputTests.devices(try fixture.queuedLines())
        #expect(devices.sorted() == (1...8).map { "S\($0)" }.sorted(), "\(devices)")
    }

    /// A session's stored progress is read back when the session resumes:
    /// the protocol as a client other than `ingestd send` sees it.
    @Test func aResumedSessionStartsWhereItsLastCommitEnded() throws {
        let fixture = try Self.fixture()
        let agent = try Self.startAgent(fixture)
        defer { _ = agent.terminate() }
        let session = "0123456789abcdef0123"
        let first = Self.lines(1...3) + "{bad\n"
        let answers1 = try SocketClient.exchange(
            fixture.stateDirectory + "/ingestd.sock",
            "EDGEINGEST-SEND 1 session=\(session)\n" + first
        )
        #expect(answers1.hasPrefix("RESUME 0 0\n"), "\(answers1)")
        #expect(answers1.contains("REJECTED 4 malformed_json"), "\(answers1)")
        #expect(answers1.contains("COMMITTED 4 \(first.utf8.count)\n"), "\(answers1)")
        #expect(answers1.hasSuffix("DONE 4 1\n"), "\(answers1)")
        // The same session again: told to resume after line 4, its numbering goes on.
        let answers2 = try SocketClient.exchange(
            fixture.stateDirectory + "/ingestd.sock",
            "EDGEINGEST-SEND 1 session=\(session)\n" + Self.lines(5...5)
        )
        #expect(answers2.hasPrefix("RESUME 4 \(first.utf8.count)\n"), "\(answers2)")
        #expect(answers2.hasSuffix("DONE 5 1\n"), "the session's totals: \(answers2)")
        let bad = try SocketClient.exchange(fixture.stateDirectory + "/ingestd.sock", "EDGEINGEST-SEND 1 session=x\n")
        #expect(bad.hasPrefix("ERROR session must be 16 to 64 characters"), "\(bad)")
    }

    @Test func socketKeysBelongToSocketInputs() throws {
        let fixture = try AgentFixture(inputs: "[[inputs]]\nkind = \"stdin\"\nsocket = \"/tmp/x.sock\"\n")
        let result = try fixture.run(["check-config"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("socket: applies only to a socket input"), "\(result.stderr)")
    }
}

/// check-config warns when a configuration meant for the service reads stdin.
@Suite struct StdinUnderSystemdWarningTests {
    @Test func aServiceConfigurationWithAStdinInputGetsAWarning() throws {
        let fixture = try AgentFixture()  // a stdin input
        var environment = IngestdBinary.environment
        environment["CONFIGURATION_DIRECTORY"] = fixture.dir.path
        let result = try IngestdBinary.run(["check-config", "--config", fixture.configPath], environment: environment)
        #expect(result.status == 0, "a warning, not a refusal")
        #expect(
            result.stderr.contains(
                "warning: input 'stdin' reads stdin, which is /dev/null when ingestd runs as a service"
            )
        )
        let byHand = try fixture.run(["check-config"])
        #expect(!byHand.stderr.contains("warning:"), "run by hand, stdin is fine")
        let socket = try AgentFixture(inputs: "[[inputs]]\nkind = \"socket\"\n")
        let service = try IngestdBinary.run(["check-config", "--config", socket.configPath], environment: environment)
        #expect(!service.stderr.contains("warning:"), "\(service.stderr)")
    }
}

/// A client of the socket protocol written by hand: sends `text`, shuts
/// down its writing side and returns everything the agent answered.
enum SocketClient {
    static func opened(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.enumerated() { raw[i] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                SwiftGlibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        return fd
    }

    static func write(_ fd: Int32, _ text: String) {
        _ = Array(text.utf8).withUnsafeBytes { SwiftGlibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads answers into `text` until `done` says so (true) or 10 s pass (false).
    static func answers(_ fd: Int32, until done: (String) -> Bool, into text: inout String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = Date().addingTimeInterval(10)
        while !done(text) {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard Date() < deadline, poll(&pfd, 1, 100) >= 0 else { return false }
            guard pfd.revents != 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { SwiftGlibc.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return done(text) }
            text += String(decoding: buffer[0..<n], as: UTF8.self)
        }
        return true
    }

    static func exchange(_ path: String, _ text: String) throws -> String {
        let fd = try opened(path)
        defer { close(fd) }
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        shutdown(fd, Int32(SHUT_WR))
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            out += buffer[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }
}
