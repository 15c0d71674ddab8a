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

    @Test func whenTheAgentIsKilledSendFailsAndEveryLineItConfirmedIsKept() throws {
        let fixture = try Self.fixture()
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        #expect(eventually { FileManager.default.fileExists(atPath: fixture.stateDirectory + "/ingestd.sock") })
        let input = fixture.dir.file("input.ndjson")
        try Self.lines(1...300_000).write(toFile: input, atomically: true, encoding: .utf8)
        let stderr = fixture.dir.file("send.stderr")
        FileManager.default.createFile(atPath: stderr, contents: nil)
        let send = Process()
        send.executableURL = IngestdBinary.url
        send.arguments = ["send", "--config", fixture.configPath]
        send.environment = IngestdBinary.environment
        send.standardInput = FileHandle(forReadingAtPath: input)
        send.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderr))
        try send.run()
        // Kill the agent once it has committed some of the stream, not all.
        #expect(eventually { ((try? fixture.status())?["accepted_total"] as? Int ?? 0) > 5_000 })
        kill(agent.process.processIdentifier, SIGKILL)
        agent.process.waitUntilExit()
        send.waitUntilExit()
        let said = try String(contentsOfFile: stderr, encoding: .utf8)
        #expect(send.terminationStatus == 75, "\(said)")
        let confirmed = try #require(
            said.range(of: #"after confirming (\d+) lines"#, options: .regularExpression).flatMap {
                Int(said[$0].split(separator: " ")[2])
            },
            "\(said)"
        )
        #expect(confirmed > 0 && confirmed < 300_000, "the kill came after some commits and before the end")
        // Every line send was told is committed is in the queue.
        let devices = Set(FileInputTests.devices(try fixture.queuedLines()))
        let missing = (1...max(1, confirmed)).filter { confirmed > 0 && !devices.contains("S\($0)") }
        #expect(missing.isEmpty, "\(missing.count) confirmed lines missing, e.g. \(missing.prefix(5))")
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
