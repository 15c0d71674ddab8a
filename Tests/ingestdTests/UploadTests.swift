import Foundation
import TestSupport
import Testing

/// Real libcurl against a real loopback backend, through the built binary.
@Suite(.serialized) struct UploadTests {
    static func fixture(
        _ backend: TestBackend,
        _ upload: String = "",
        linger: Int = 20,
        retryBase: Int = 20,
        retryCap: Int = 200
    ) throws -> AgentFixture {
        try AgentFixture(
            """

            [upload]
            url = "\(backend.url)"
            linger_ms = \(linger)
            retry_base_ms = \(retryBase)
            retry_cap_ms = \(retryCap)
            \(upload)
            """
        )
    }

    static func readings(_ range: Range<Int>, poison: Int? = nil, device: String = "P") -> String {
        range.map { reading($0 % 40, device: $0 == poison ? device : "U\($0)") + "\n" }.joined()
    }

    /// Runs the agent with stdin open, feeds `text`, waits for `expected`
    /// unique records at the backend and an empty queue, then stops it.
    static func stream(
        _ fixture: AgentFixture,
        _ backend: TestBackend,
        _ text: String,
        expected: Int
    ) throws -> (agent: RunningAgent, status: [String: Any]) {
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(text)
        #expect(try backend.waitForUnique(expected) == expected, "\(agent.stderr.suffix(2000))")
        var status: [String: Any] = [:]
        _ = eventually {
            status = (try? fixture.status()) ?? [:]
            return status["queued_records"] as? Int == 0 && status["accepted_total"] as? Int ?? 0 > 0
        }
        return (agent, status)
    }

    @Test func everyReadingIsDeliveredOnceAndDeletedThenTheAgentExits() throws {
        let backend = try TestBackend()
        let fixture = try Self.fixture(backend, "gzip = true\nmax_records = 500")
        let result = try fixture.run(["run"], stdin: Data(Self.readings(0..<2500).utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let stats = try backend.stats()
        #expect(stats["unique"] as? Int == 2500)
        #expect(stats["duplicates"] as? Int == 0)
        #expect((stats["bodies_gzip"] as? Int ?? 0) >= 5)
        #expect(stats["types"] as? [String] == ["WeatherSensor"])
        let status = try fixture.status()
        #expect(status["queued_records"] as? Int == 0)
        #expect(status["uploaded_total"] as? Int == 2500)
        #expect(try fixture.queuedLines().isEmpty)
    }

    @Test func unavailableBackendIsRetriedUntilEverythingArrives() throws {
        let backend = try TestBackend(["--fail", "4", "--fail-status", "503"])
        let fixture = try Self.fixture(backend)
        let (agent, status) = try Self.stream(fixture, backend, Self.readings(0..<1500), expected: 1500)
        #expect(agent.terminate() == 0)
        #expect(try backend.stats()["duplicates"] as? Int == 0)
        #expect(status["queued_records"] as? Int == 0)
        #expect((status["upload_resends"] as? Int ?? 0) >= 4)
        #expect(agent.stderr.contains("Upload failed; retrying with backoff"))
    }

    /// A queue at its bound under overflow_policy "block" pauses the input
    /// (said once) and resumes it when uploads free space (said once).
    @Test func aFullQueuePausesTheInputUntilUploadsFreeSpace() throws {
        let backend = try TestBackend(["--fail", "6", "--fail-status", "503"])
        let fixture = try AgentFixture(
            "\n[upload]\nurl = \"\(backend.url)\"\nlinger_ms = 20\nretry_base_ms = 100\nretry_cap_ms = 300\nmax_records = 10",
            queue: "max_records = 20\noverflow_policy = \"block\"\ncommit_max_records = 5\ncommit_interval_ms = 20\n"
        )
        let (agent, status) = try Self.stream(fixture, backend, Self.readings(0..<200), expected: 200)
        #expect(agent.terminate() == 0)
        #expect(status["dropped_total"] as? Int == 0)
        #expect(
            agent.stderr.components(separatedBy: "The queue is full; this input is paused").count >= 2,
            "\(agent.stderr.suffix(2000))"
        )
        #expect(agent.stderr.contains("The queue has room again; this input resumed"), "\(agent.stderr.suffix(2000))")
        #expect(try backend.stats()["unique"] as? Int == 200)
    }

    @Test func statusShowsBackingOffUntilWithTheReason() throws {
        let backend = try TestBackend(["--fail", "1000", "--fail-status", "503"])
        let fixture = try Self.fixture(backend, retryBase: 2000, retryCap: 4000)
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(Self.readings(0..<5))
        var status: [String: Any] = [:]
        _ = eventually {
            status = (try? fixture.status()) ?? [:]
            return status["state"] as? String == "backing_off"
        }
        #expect(status["state"] as? String == "backing_off")
        #expect(status["upload_reason"] as? String == "HTTP 503")
        #expect((status["backing_off_until"] as? String)?.hasSuffix("Z") == true)
        #expect(status["queued_records"] as? Int == 5)
        #expect((status["last_upload"] as? [String: Any])?["outcome"] as? String == "failed: HTTP 503")
        #expect(agent.terminate() == 0)
    }

    @Test func aBackendThatIsDownIsRetriedWithoutAHotLoopAndEverythingArrivesWhenItIsBack() throws {
        // Find a free port, then leave nothing listening on it: connection refused.
        var port = 0
        do {
            let probe = try TestBackend()
            port = probe.port
        }
        let fixture = try AgentFixture(
            "\n[upload]\nurl = \"http://127.0.0.1:\(port)/ingest/v1/batches\"\nlinger_ms = 20\nretry_base_ms = 100\nretry_cap_ms = 1000\nmax_records = 1000\n"
        )
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(Self.readings(0..<2500))
        usleep(4_000_000)
        let status = try fixture.status()
        let attempts = status["upload_requests"] as? Int ?? 0
        // Backoff doubles from 0.1 s to a 1 s cap with full jitter: about a
        // dozen attempts in 4 s. A hot loop would make thousands.
        #expect(attempts >= 3 && attempts <= 40, "\(attempts) attempts in 4 s")
        #expect(status["state"] as? String == "backing_off")
        #expect((status["upload_reason"] as? String)?.contains("connection refused") == true)
        #expect(status["queued_records"] as? Int == 2500)

        // The backend comes back on the same port: everything arrives, once.
        let backend = try TestBackend(["--port", "\(port)"])
        #expect(try backend.waitForUnique(2500) == 2500)
        #expect(eventually { (try? fixture.status())?["queued_records"] as? Int == 0 })
        #expect(agent.terminate() == 0)
        #expect(try backend.stats()["duplicates"] as? Int == 0)
        // The journal (here stderr) says when uploads recovered, and how long the trouble lasted.
        let resumed = agent.stderr.split(separator: "\n").filter { $0.contains("Uploads resumed after ") }
        #expect(resumed.count == 1, "\(agent.stderr.suffix(2000))")
        #expect(resumed.first?.contains(" records waiting") == true)
        // Fields are plain numbers for tools ("1500"); the message groups digits for people ("1,500"):
        // batches of 1000 leave at least 1,500 of the 2,500 waiting after the first one.
        let line = String(resumed.first ?? "")
        #expect(line.range(of: #"ingest\.queued=[0-9]+ "#, options: .regularExpression) != nil, "\(line)")
        #expect(line.range(of: #"[0-9],[0-9]{3} records waiting"#, options: .regularExpression) != nil, "\(line)")
    }

    @Test func aBatchOutOfRetriesBecomesDeadLettersNotLoss() throws {
        let backend = try TestBackend(["--fail", "1000", "--fail-status", "503"])
        let fixture = try Self.fixture(backend, "max_retries = 2")
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(Self.readings(0..<7))
        var status: [String: Any] = [:]
        #expect(
            eventually {
                status = (try? fixture.status()) ?? [:]
                return status["dead_letter_records"] as? Int == 7
            },
            "\(status)"
        )
        #expect(status["queued_records"] as? Int == 0)
        #expect(agent.terminate() == 0)
        #expect(try backend.stats()["requests"] as? Int == 3, "one try and two retries")
        let list = try fixture.run(["dead-letter", "list"])
        #expect(list.stdout.hasPrefix("7 dead letters\n"))
        #expect(list.stdout.contains("retries exhausted: HTTP 503"))
        #expect(agent.stderr.contains("Giving up on a batch after the configured retries"))
    }

    @Test func retryAfterIsHonoured() throws {
        let backend = try TestBackend(["--fail", "1", "--fail-status", "429", "--retry-after", "1"])
        let fixture = try Self.fixture(backend)
        let start = Date()
        let (agent, _) = try Self.stream(fixture, backend, Self.readings(0..<10), expected: 10)
        #expect(Date().timeIntervalSince(start) >= 1.0, "the retry came before the server's Retry-After")
        #expect(agent.terminate() == 0)
    }

    @Test func connectionResetsLoseNothing() throws {
        let backend = try TestBackend(["--reset", "3"])
        let fixture = try Self.fixture(backend)
        let (agent, status) = try Self.stream(fixture, backend, Self.readings(0..<800), expected: 800)
        #expect(agent.terminate() == 0)
        #expect(status["queued_records"] as? Int == 0)
        #expect(agent.stderr.contains("was reset before the backend answered"))
    }

    @Test func aSlowAcknowledgementIsResentWithTheSameIdsAndKey() throws {
        let backend = try TestBackend(["--slow", "1", "--slow-ms", "1500"])
        let fixture = try Self.fixture(backend, "timeout_ms = 400")
        let (agent, status) = try Self.stream(fixture, backend, Self.readings(0..<300), expected: 300)
        #expect(agent.terminate() == 0)
        let stats = try backend.stats()
        // The backend stored the first send; the client timed out and sent
        // the same records again: duplicates at the backend, none lost.
        #expect((stats["duplicates"] as? Int ?? 0) > 0)
        #expect((stats["key_repeats"] as? Int ?? 0) >= 1, "the re-send must carry the same Idempotency-Key")
        #expect(status["queued_records"] as? Int == 0)
        #expect(agent.stderr.contains("timed out after 400 ms"))
    }

    @Test func aPoisonRecordIsIsolatedAndDeadLetteredWhileTheRestGoesThrough() throws {
        let backend = try TestBackend(["--poison", "POISON"])
        let fixture = try Self.fixture(backend, "max_records = 1000", linger: 500)
        let (agent, status) = try Self.stream(
            fixture,
            backend,
            Self.readings(0..<1000, poison: 637, device: "POISON"),
            expected: 999
        )
        #expect(agent.terminate() == 0)
        #expect(try backend.stats()["unique"] as? Int == 999)
        #expect(status["dead_letter_records"] as? Int == 1)
        #expect(status["queued_records"] as? Int == 0)
        #expect(status["uploaded_total"] as? Int == 999)
        #expect(agent.stderr.contains("A record was refused by the backend; moved to the dead-letter table"))
    }

    /// A pipe (`… | ingestd run`) ends with its final drain: refused
    /// batches are bisected there too, so 10 refused readings among 10,000
    /// go to the dead letters and the rest are delivered (before, all
    /// 10,000 stayed queued at the end of input).
    @Test func thePipesFinalDrainBisectsRefusedBatches() throws {
        let backend = try TestBackend(["--poison", "POISON"])
        let fixture = try Self.fixture(backend, "max_records = 1000\nshutdown_timeout_ms = 30000", linger: 500)
        let poisoned = Set((0..<10).map { 37 + $0 * 997 })
        let text = (0..<10_000).map { reading($0 % 40, device: poisoned.contains($0) ? "POISON" : "U\($0)") + "\n" }
            .joined()
        let result = try fixture.run(["run"], stdin: Data(text.utf8))
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(try backend.waitForUnique(9_990) == 9_990)
        let status = try fixture.status()
        #expect(status["dead_letter_records"] as? Int == 10, "\(status)")
        #expect(status["queued_records"] as? Int == 0, "\(status)")
    }

    @Test func perRecordRejectionsInA200BodyAreDeadLettered() throws {
        let backend = try TestBackend(["--reject-device", "U5"])
        let fixture = try Self.fixture(backend)
        let (agent, status) = try Self.stream(fixture, backend, Self.readings(0..<20), expected: 19)
        #expect(agent.terminate() == 0)
        #expect(status["dead_letter_records"] as? Int == 1)
        #expect(status["queued_records"] as? Int == 0)
        // Said in the journal too, with the reason (and never the payload).
        #expect(
            agent.stderr.contains(
                "The backend stored a batch but refused some of its records; they moved to the dead-letter table"
            )
        )
        #expect(agent.stderr.contains("ingest.reason=device is blocked"))
        #expect(!agent.stderr.contains("\"U5\""))
    }

    @Test func tooLargeBatchesAreSplit() throws {
        let backend = try TestBackend(["--max-body", "30000"])
        let fixture = try Self.fixture(backend, "max_records = 1000", linger: 300)
        let (agent, status) = try Self.stream(fixture, backend, Self.readings(0..<1000), expected: 1000)
        #expect(agent.terminate() == 0)
        #expect(try backend.stats()["duplicates"] as? Int == 0)
        #expect(status["queued_records"] as? Int == 0)
        #expect(status["dead_letter_records"] as? Int == 0)
    }

    @Test func forbiddenHoldsEverythingQueuedAndSaysWhy() throws {
        let backend = try TestBackend(["--always-status", "403"])
        let fixture = try Self.fixture(backend)
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(Self.readings(0..<50))
        var status: [String: Any] = [:]
        _ = eventually {
            status = (try? fixture.status()) ?? [:]
            return status["state"] as? String == "error"
        }
        #expect(status["state"] as? String == "error")
        #expect((status["problem"] as? String)?.contains("HTTP 403") == true)
        #expect(status["queued_records"] as? Int == 50)
        let requests = try backend.stats()["requests"] as? Int ?? 0
        usleep(500_000)
        #expect(try backend.stats()["requests"] as? Int == requests, "a held uploader must stop hammering")
        let health = try fixture.run(["status"])
        #expect(health.status == 1)
        #expect(agent.terminate() == 0)
        #expect(try fixture.queuedLines().count == 50)
        #expect(agent.stderr.components(separatedBy: "Uploading is held").count - 1 == 1)
    }

    @Test func theTokenIsSentButNeverLogged() throws {
        let backend = try TestBackend(["--fail", "1"])
        let dir = try TemporaryDirectory()
        let tokenFile = dir.file("token")
        try "s3cr3t-token-value\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let fixture = try Self.fixture(backend, "token_file = \"\(tokenFile)\"")
        let (agent, _) = try Self.stream(fixture, backend, Self.readings(0..<5), expected: 5)
        #expect(agent.terminate() == 0)
        #expect(try backend.stats()["auth"] as? [String] == ["Bearer s3cr3t-token-value"])
        #expect(!agent.stderr.contains("s3cr3t"))
        #expect(
            !(try String(contentsOfFile: fixture.stateDirectory + "/status.json", encoding: .utf8)).contains("s3cr3t")
        )
    }
}
