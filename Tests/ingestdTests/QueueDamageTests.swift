import Foundation
import TestSupport
import Testing

/// Damage in the queue file, as an SD card does it (flipped bits, a
/// truncated file), against the built binary: no garbled reading ever
/// reaches the backend, and every reading is either received or accounted
/// for as quarantined or dropped (damaged) — never silently gone.
@Suite(.serialized) struct QueueDamageTests {
    static let readings = 3000

    /// Readings with their own `_id`s, in the form the queue stores them.
    static let lines: [String] = (0..<readings).map { i in
        let id = String(format: "%024x", i + 1)
        return
            #"{"_id":"\#(id)","deviceId":"WX\#(i % 50)","temperatureInFahrenheit":\#(60 + i % 20).5,"barometricPressureInHg":29.81,"windSpeedInMph":\#(i)}"#
    }

    /// A queue file holding every reading, in 30 segments, and the status
    /// file the agent that filled it left.
    static func filledQueue() throws -> (queue: Data, status: Data) {
        let fixture = try AgentFixture(queue: "commit_max_records = 100\n")
        let input = Data((lines.joined(separator: "\n") + "\n").utf8)
        let result = try fixture.run(["run"], stdin: input)
        #expect(result.status == 0, "\(result.stderr)")
        return (
            try Data(contentsOf: URL(fileURLWithPath: fixture.stateDirectory + "/queue.sqlite")),
            try Data(contentsOf: URL(fileURLWithPath: fixture.stateDirectory + "/status.json"))
        )
    }

    enum Damage: CustomStringConvertible, Sendable {
        case flips(seed: UInt64, count: Int)
        /// Cut to this percentage of the file's size.
        case truncate(percent: Int)
        /// Cut to this many bytes (4,097: the first page and one byte).
        case truncateTo(bytes: Int)

        var description: String {
            switch self {
            case .flips(let seed, let count): "\(count) bit flips (seed \(seed))"
            case .truncate(let percent): "truncated to \(percent) % of its size"
            case .truncateTo(let bytes): "truncated to \(bytes) bytes"
            }
        }

        func apply(to file: Data) -> Data {
            switch self {
            case .flips(let seed, let count):
                var bytes = [UInt8](file)
                var random = SplitMix64(seed: seed)
                for _ in 0..<count {
                    let offset = Int(random.next() % UInt64(bytes.count))
                    bytes[offset] ^= 1 << UInt8(random.next() % 8)
                }
                return Data(bytes)
            case .truncate(let percent):
                return file.prefix(file.count * percent / 100)
            case .truncateTo(let bytes):
                return file.prefix(bytes)
            }
        }
    }

    @Test(arguments: [
        Damage.flips(seed: 1, count: 3), .flips(seed: 2, count: 8), .flips(seed: 3, count: 20),
        .flips(seed: 4, count: 60), .flips(seed: 5, count: 200), .truncate(percent: 60), .truncate(percent: 20),
        .truncate(percent: 0), .truncateTo(bytes: 4097), .truncateTo(bytes: 8192),
    ])
    func noGarbledReadingIsSentAndEveryDamagedOneIsReported(_ damage: Damage) throws {
        let original = try Self.filledQueue()
        let dir = try TemporaryDirectory()
        let received = dir.file("received.ndjson")
        let receiver = try TestBackend(["--record", received])
        let fixture = try AgentFixture(
            "[upload]\nurl = \"\(receiver.url)\"\nlinger_ms = 10\n",
            queue: "commit_max_records = 100\n"
        )
        try FileManager.default.createDirectory(atPath: fixture.stateDirectory, withIntermediateDirectories: true)
        try damage.apply(to: original.queue).write(to: URL(fileURLWithPath: fixture.stateDirectory + "/queue.sqlite"))
        // The status file the filling agent left: where repair finds the
        // numbers a file that lost its counters held.
        try original.status.write(to: URL(fileURLWithPath: fixture.stateDirectory + "/status.json"))

        let verify = try fixture.run(["verify"])
        #expect(verify.status == 65, "verify must report the damage (\(damage)): \(verify.stdout)")
        let repair = try fixture.run(["repair"])
        #expect(repair.status == 65, "\(repair.stdout)\(repair.stderr)")
        #expect(try fixture.run(["verify"]).status == 0, "after repair the queue verifies")
        let run = try fixture.run(["run"], stdin: Data())
        #expect(run.status == 0, "\(run.stderr)")

        let expected = Dictionary(uniqueKeysWithValues: Self.lines.map { (Self.id(of: $0), $0) })
        let got = (try? String(contentsOfFile: received, encoding: .utf8))?.split(separator: "\n") ?? []
        var unique = Set<String>()
        for line in got {
            let id = Self.id(of: String(line))
            #expect(
                expected[id] == String(line),
                "garbled reading reached the backend (\(damage)): \(line.prefix(120))"
            )
            unique.insert(id)
        }
        if case .truncate(percent: 0) = damage {
            // The counters went with the file: the status file's are put back.
            #expect(repair.stdout.contains("the file was empty (0 bytes): whatever it held is lost"))
            #expect(
                repair.stdout.contains("counted 3000 missing readings as dropped (reason damaged)"),
                "\(repair.stdout)"
            )
            #expect(got.isEmpty)
        }
        let status = try fixture.status()
        let quarantined = status["quarantined_records"] as? Int ?? 0
        let dropped = (status["dropped_by_reason"] as? [String: Int])?["damaged"] ?? 0
        #expect(status["queued_records"] as? Int == 0)
        #expect(
            unique.count + quarantined + dropped == Self.readings,
            "\(damage): \(unique.count) received + \(quarantined) quarantined + \(dropped) dropped (damaged); repair said: \(repair.stdout)"
        )
    }

    static func id(of line: String) -> String {
        guard let range = line.range(of: #""_id":""#) else { return "" }
        return String(line[range.upperBound...].prefix(24))
    }
}

/// `ingestd verify` reads the queue next to a running agent (no lock,
/// one read transaction) and finds it intact while readings flow in.
@Suite struct VerifyWhileRunningTests {
    @Test func verifyWorksNextToARunningAgent() throws {
        let fixture = try AgentFixture()
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        defer { _ = agent.terminate() }
        agent.write((0..<500).map { reading($0, device: "V\($0)") + "\n" }.joined())
        #expect(try FileInputTests.waitForAccepted(fixture, 500) == 500)
        agent.write((500..<1000).map { reading($0, device: "V\($0)") + "\n" }.joined())
        let result = try fixture.run(["verify"])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.hasSuffix("intact\n"), "\(result.stdout)")
        #expect(agent.process.isRunning, "verify must not disturb the agent")
    }
}

/// `export` and `import` never carry a damaged segment along, and the
/// number they print is what they carried.
@Suite struct DamagedExportTests {
    @Test func exportQuarantinesADamagedSegmentAndCountsOnlyWhatItCarried() throws {
        let fixture = try AgentFixture(queue: "commit_max_records = 100\n")
        let readings = (0..<300).map { reading($0, device: "E\($0)") + "\n" }.joined()
        #expect(try fixture.run(["run"], stdin: Data(readings.utf8)).status == 0)
        let queuePath = fixture.stateDirectory + "/queue.sqlite"
        let segments = try sqlite3(queuePath, "SELECT count(*), min(id) FROM segments;")
        #expect(segments.hasPrefix("3|"), "\(segments)")
        let damaged = Int(segments.split(separator: "|")[1].trimmingCharacters(in: .whitespacesAndNewlines))!
        // One byte of one segment's payload (stored compressed) changes, as on a worn card.
        _ = try sqlite3(
            queuePath,
            "UPDATE segments SET payload = substr(payload, 1, 40) || (CASE WHEN substr(payload, 41, 1) = x'00' THEN x'01' ELSE x'00' END) || substr(payload, 42) WHERE id = \(damaged);"
        )
        let out = fixture.dir.file("carry.ingest.sqlite")
        let export = try fixture.run(["export", "--out", out])
        #expect(export.status == 0, "\(export.stderr)")
        #expect(export.stdout == "Exported 200 readings to \(out).\n")
        #expect(export.stderr.contains("quarantined"), "\(export.stderr)")
        let carried = try fixture.queuedLinesAt(out)
        #expect(carried.count == 200)
        // The damaged segment held E0…E99: none of them went along.
        #expect(!carried.contains { $0.contains("\"E1\"") } && carried.contains { $0.contains("\"E101\"") })
        // The source still accounts for every reading.
        let status = try fixture.status()
        #expect(status["quarantined_records"] as? Int == 100)
        #expect(status["queued_records"] as? Int == 200)
    }

    /// `import` of an exported file with a damaged segment: the damaged
    /// part stays behind in the file's quarantine, the rest is imported,
    /// and the printed number is what came over.
    @Test func importLeavesADamagedSegmentBehind() throws {
        let source = try AgentFixture(queue: "commit_max_records = 100\n")
        let readings = (0..<300).map { reading($0, device: "I\($0)") + "\n" }.joined()
        #expect(try source.run(["run"], stdin: Data(readings.utf8)).status == 0)
        let exported = source.dir.file("carry.ingest.sqlite")
        #expect(try source.run(["export", "--out", exported]).status == 0)
        let first = try sqlite3(exported, "SELECT min(id) FROM segments;").trimmingCharacters(
            in: .whitespacesAndNewlines
        )
        _ = try sqlite3(
            exported,
            "UPDATE segments SET payload = substr(payload, 1, 40) || (CASE WHEN substr(payload, 41, 1) = x'00' THEN x'01' ELSE x'00' END) || substr(payload, 42) WHERE id = \(first);"
        )
        let target = try AgentFixture()
        let result = try target.run(["import", exported])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Imported 200 readings"), "\(result.stdout)")
        let lines = try target.queuedLines()
        #expect(lines.count == 200)
        #expect(!lines.contains { $0.contains("\"I1\"") } && lines.contains { $0.contains("\"I101\"") })
        #expect(try target.status()["queued_records"] as? Int == 200)
    }
}
