import Foundation
import TestSupport
import Testing

/// File input against the built binary: follow, rotate both ways, new
/// files, and kill -9 — every line exactly once.
@Suite(.serialized) struct FileInputTests {
    static func fixture(_ dir: String) throws -> AgentFixture {
        try AgentFixture(
            "",
            inputs: """
                [[inputs]]
                kind = "file"
                paths = ["\(dir)/*.ndjson"]
                poll_interval_ms = 50
                """
        )
    }

    /// Appends lines `range` (each unique by deviceId) to `path`.
    static func append(_ range: Range<Int>, to path: String) throws {
        if !FileManager.default.fileExists(atPath: path) { FileManager.default.createFile(atPath: path, contents: nil) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        handle.write(Data(range.map { reading($0 % 40, device: "L\($0)") + "\n" }.joined().utf8))
        try handle.close()
    }

    /// Waits until the agent reports `count` accepted readings.
    static func waitForAccepted(_ fixture: AgentFixture, _ count: Int, timeout: Double = 20) throws -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        var accepted = -1
        while Date() < deadline {
            if let data = FileManager.default.contents(atPath: fixture.stateDirectory + "/status.json"),
                let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let n = json["accepted_total"] as? Int
            {
                accepted = n
                if n >= count { return n }
            }
            usleep(20_000)
        }
        return accepted
    }

    static func devices(_ lines: [String]) -> [String] {
        lines.compactMap { line in
            guard let start = line.range(of: #""deviceId":""#)?.upperBound,
                let end = line[start...].firstIndex(of: "\"")
            else { return nil }
            return String(line[start..<end])
        }
    }

    @Test func followsAppendsRotationsAndNewFilesExactlyOnce() throws {
        let inputs = try TemporaryDirectory()
        let fixture = try Self.fixture(inputs.path)
        let a = inputs.file("a.ndjson")
        try Self.append(0..<100, to: a)
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        #expect(try Self.waitForAccepted(fixture, 100) == 100)

        try Self.append(100..<150, to: a)
        #expect(try Self.waitForAccepted(fixture, 150) == 150)

        // `ingestd status` while the agent runs: healthy (exit 0), with the file's offset.
        // The offset is counted just after the batch is handed to the commit, the
        // accepted total just after the commit: a status written in between shows
        // the new total with the old offset (CI, c74ed91), until the next write.
        let fileSize = try FileManager.default.attributesOfItem(atPath: a)[.size] as! Int
        _ = eventually {
            guard let data = FileManager.default.contents(atPath: fixture.stateDirectory + "/status.json"),
                let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let input = (json["inputs"] as? [[String: Any]])?.first
            else { return false }
            return (input["files"] as? [String: Int])?[a] == fileSize
        }
        let running = try fixture.run(["status", "--json"])
        #expect(running.status == 0, "\(running.stderr)")
        let live = try JSONSerialization.jsonObject(with: Data(running.stdout.utf8)) as! [String: Any]
        #expect(live["state"] as? String == "idle")
        let input = try #require((live["inputs"] as? [[String: Any]])?.first)
        #expect((input["files"] as? [String: Int])?[a] == fileSize)
        let human = try fixture.run(["status"])
        #expect(human.status == 0)
        #expect(human.stdout.contains("ingestd: running (pid \(agent.process.processIdentifier)), state idle"))
        #expect(human.stdout.contains("\(a): offset \(fileSize)"))

        // Rotation by rename + create: the old file is read to its end.
        try Self.append(150..<160, to: a)
        try FileManager.default.moveItem(atPath: a, toPath: inputs.file("a.ndjson.1"))
        try Self.append(160..<190, to: a)
        #expect(try Self.waitForAccepted(fixture, 190) == 190)

        // Rotation by copytruncate: the file is emptied in place and rewritten.
        try FileManager.default.copyItem(atPath: a, toPath: inputs.file("a.copy"))
        try FileHandle(forWritingTo: URL(fileURLWithPath: a)).truncate(atOffset: 0)
        try Self.append(190..<230, to: a)  // more bytes than before: found by the fingerprint
        #expect(try Self.waitForAccepted(fixture, 230) == 230)

        // A file that appears later, with a last line still being written.
        let b = inputs.file("b.ndjson")
        try Self.append(230..<240, to: b)
        #expect(try Self.waitForAccepted(fixture, 240) == 240)

        #expect(agent.terminate() == 0, "\(agent.stderr)")
        let devices = Self.devices(try fixture.queuedLines())
        #expect(devices.count == 240)
        #expect(Set(devices) == Set((0..<240).map { "L\($0)" }))
        let status = try fixture.status()
        #expect(status["rejected_total"] as? Int == 0)
    }

    @Test func killDashNineMidStreamLosesAndDuplicatesNothing() async throws {
        let inputs = try TemporaryDirectory()
        let fixture = try Self.fixture(inputs.path)
        let path = inputs.file("stream.ndjson")
        var written = 0
        var rng = SystemRandomNumberGenerator()
        for round in 0..<5 {
            let agent = try RunningAgent(
                arguments: ["run", "--config", fixture.configPath],
                environment: IngestdBinary.environment
            )
            // Keep appending while the agent reads, then kill it at a random moment.
            let deadline = Date().addingTimeInterval(Double.random(in: 0.3...0.9, using: &rng))
            while Date() < deadline {
                let n = Int.random(in: 50...3000, using: &rng)
                try Self.append(written..<written + n, to: path)
                written += n
                usleep(UInt32.random(in: 1_000...30_000, using: &rng))
            }
            kill(agent.process.processIdentifier, SIGKILL)
            agent.process.waitUntilExit()
            #expect(agent.process.terminationReason == .uncaughtSignal, "round \(round)")
        }
        // A last, clean run catches up with everything written.
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        #expect(try Self.waitForAccepted(fixture, written, timeout: 60) == written)
        #expect(agent.terminate() == 0)
        let devices = Self.devices(try fixture.queuedLines())
        #expect(devices.count == written, "\(devices.count) queued for \(written) written")
        #expect(Set(devices).count == written, "duplicates")
        #expect(Set(devices) == Set((0..<written).map { "L\($0)" }))
    }
}

/// A flood of bad lines across the files one input follows: one limit per
/// input (not per file), and the summary is logged when the agent stops.
@Suite struct FileInputRejectionLogTests {
    @Test func floodsAcrossFilesShareOneLimitAndTheSummaryComesAtTheStop() throws {
        let inputs = try TemporaryDirectory()
        let fixture = try FileInputTests.fixture(inputs.path)
        for name in ["a", "b", "c"] {
            try Data((1...15).map { "{bad \($0)\n" }.joined().utf8).write(
                to: URL(fileURLWithPath: inputs.file("\(name).ndjson"))
            )
        }
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        #expect(eventually { (try? fixture.status())?["rejected_total"] as? Int == 45 })
        #expect(agent.terminate() == 0)
        let lines = agent.stderr.split(separator: "\n")
        #expect(lines.filter { $0.contains("Rejected line ") }.count == 10, "\(agent.stderr.suffix(3000))")
        let summaries = lines.filter { $0.contains("… and ") }
        #expect(summaries.count == 1, "\(agent.stderr.suffix(3000))")
        #expect(
            summaries.first?.contains("… and 35 more malformed_json rejections from file:\(inputs.path)/*.ndjson")
                == true
        )
    }
}
