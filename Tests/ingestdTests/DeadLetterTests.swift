import Foundation
import TestSupport
import Testing

@Suite(.serialized) struct DeadLetterTests {
    @Test func poisonRecordsCanBeListedExportedAndReplayed() throws {
        let backend = try TestBackend(["--poison", "POISON"])
        let fixture = try UploadTests.fixture(backend, "max_records = 100", linger: 300)
        let (agent, status) = try UploadTests.stream(
            fixture,
            backend,
            UploadTests.readings(0..<100, poison: 42, device: "POISON"),
            expected: 99
        )
        #expect(agent.terminate() == 0)
        #expect(status["dead_letter_records"] as? Int == 1)
        // Every accepted reading is uploaded, dead-lettered, dropped or still queued.
        let accounted = ["uploaded_total", "dead_letter_records", "dropped_total", "queued_records"].map {
            status[$0] as? Int ?? -1
        }
        #expect(accounted.reduce(0, +) == status["accepted_total"] as? Int, "\(accounted)")

        let list = try fixture.run(["dead-letter", "list"])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.hasPrefix("1 dead letter\n"))
        #expect(list.stdout.contains("WeatherSensor  refused by the backend: HTTP 400"))
        #expect(!list.stdout.contains("POISON"), "list shows no record data")

        let out = fixture.dir.file("dead.ndjson")
        let export = try fixture.run(["dead-letter", "export", "--out", out])
        #expect(export.status == 0)
        let exported = try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n")
        try #require(exported.count == 1)
        let line = try JSONSerialization.jsonObject(with: Data(exported[0].utf8)) as! [String: Any]
        #expect((line["record"] as? [String: Any])?["deviceId"] as? String == "POISON")
        #expect(line["reason"] as? String == "refused by the backend: HTTP 400")
        let mode = (try FileManager.default.attributesOfItem(atPath: out)[.posixPermissions] as! NSNumber).intValue
        #expect(mode == 0o600)

        #expect(try fixture.run(["dead-letter", "replay"]).status == 64, "replay needs --all or --number")
        let replay = try fixture.run(["dead-letter", "replay", "--all"])
        #expect(replay.stdout == "Replayed 1 dead letter into the queue.\n")

        // A fixed backend receives the replayed record, with its original _id.
        let healthy = try TestBackend()
        let fixed = try String(contentsOfFile: fixture.configPath, encoding: .utf8).replacingOccurrences(
            of: backend.url,
            with: healthy.url
        )
        try fixed.write(toFile: fixture.configPath, atomically: true, encoding: .utf8)
        let drained = try fixture.run(["run"], stdin: Data())
        #expect(drained.status == 0, "\(drained.stderr)")
        #expect(try healthy.stats()["unique"] as? Int == 1)
        let after = try fixture.status()
        #expect(after["dead_letter_records"] as? Int == 0)
        #expect(after["queued_records"] as? Int == 0)
        #expect(after["uploaded_total"] as? Int == 100)
    }
}

/// Issue 21: the queue and its dead letters can be looked at while the
/// agent runs; dead letters can be purged.
@Suite(.serialized) struct LiveInspectionTests {
    @Test func deadLettersAndQueuedReadingsCanBeReadWhileTheAgentRuns() throws {
        let backend = try TestBackend(["--poison", "POISON"])
        let fixture = try UploadTests.fixture(backend, "max_records = 100", linger: 300)
        let (agent, _) = try UploadTests.stream(
            fixture,
            backend,
            UploadTests.readings(0..<10, poison: 4, device: "POISON"),
            expected: 9
        )
        // The agent still runs and holds the queue: the readers do not need it stopped.
        #expect(agent.process.isRunning)
        let list = try fixture.run(["dead-letter", "list"])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.hasPrefix("1 dead letter\n"), "\(list.stdout)")
        let out = fixture.dir.file("dead.ndjson")
        #expect(try fixture.run(["dead-letter", "export", "--out", out]).status == 0)
        #expect(try String(contentsOfFile: out, encoding: .utf8).contains("POISON"))
        let stats = try fixture.run(["queue", "stats"])
        #expect(stats.status == 0, "\(stats.stderr)")
        #expect(stats.stdout.contains("  dead letters: 1\n"), "\(stats.stdout)")
        #expect(stats.stdout.contains("  uploaded:     9\n"), "\(stats.stdout)")
        // A change still needs the queue to itself.
        let purge = try fixture.run(["dead-letter", "purge", "--all"])
        #expect(purge.status == 74 && purge.stderr.contains("is in use"), "\(purge.stderr)")
        #expect(agent.terminate() == 0)
        #expect(
            try fixture.run(["dead-letter", "purge", "--older-than", "1d"]).stdout == "No dead letters to delete.\n"
        )
        let purged = try fixture.run(["dead-letter", "purge", "--all"])
        #expect(purged.status == 0 && purged.stdout == "Deleted 1 dead letter.\n", "\(purged.stderr)")
        #expect(try fixture.run(["dead-letter", "list"]).stdout == "0 dead letters\n")
        #expect(try fixture.run(["dead-letter", "purge"]).status == 64, "purge needs --all or --older-than")
        #expect(try fixture.run(["dead-letter", "purge", "--older-than", "7 days"]).status == 64)
    }

    @Test func peekShowsTheOldestQueuedReadingsOfAType() throws {
        let fixture = try AgentFixture("[metrics]\nlisten = \"127.0.0.1:0\"\n")
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write((1...5).map { reading($0) }.joined(separator: "\n") + "\n")
        #expect(eventually { (try? fixture.status())?["queued_records"] as? Int == 5 })
        let peek = try fixture.run(["queue", "peek", "--type", "WeatherSensor", "--limit", "3"])
        #expect(peek.status == 0, "\(peek.stderr)")
        let lines = peek.stdout.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.first?.contains(#""windSpeedInMph":1"#) == true, "\(peek.stdout)")
        #expect(lines.allSatisfy { $0.hasPrefix(#"{"_id":""#) })
        #expect(try fixture.run(["queue", "peek", "--type", "Nope"]).status == 64)
        #expect(agent.terminate() == 0)
        // Nothing was taken: all five are still queued.
        #expect(try fixture.status()["queued_records"] as? Int == 5)
    }
}
