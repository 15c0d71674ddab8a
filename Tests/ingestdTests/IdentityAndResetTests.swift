import Foundation
import TestSupport
import Testing

/// `[auth]`, `[client_reset]`, `ingestd reset`, `ingestd export` and
/// `ingestd import`, against the built binary and a loopback backend.
@Suite(.serialized) struct IdentityAndResetTests {
    func start(_ fixture: AgentFixture) throws -> RunningAgent {
        try RunningAgent(arguments: ["run", "--config", fixture.configPath], environment: IngestdBinary.environment)
    }

    /// An agent uploading to `backend` that logs in with the API key `key`,
    /// read from a file in `keys` (kept alive by the caller).
    func apiKeyFixture(_ backend: TestBackend, key: String, keys: TemporaryDirectory) throws -> AgentFixture {
        try "\(key)\n".write(toFile: keys.file("api-key"), atomically: true, encoding: .utf8)
        return try UploadTests.fixture(
            backend,
            """

            [auth]
            app_id = "weather-fleet"
            base_url = "\(backend.baseURL)"
            api_key_file = "\(keys.file("api-key"))"
            """
        )
    }

    @Test func theAgentLogsInWithAnAPIKeyAndLogsInAgainWhenTheSessionEnds() throws {
        let backend = try TestBackend(["--auth", "--api-key", "gw-secret-key"])
        let keys = try TemporaryDirectory()
        let fixture = try apiKeyFixture(backend, key: "gw-secret-key", keys: keys)
        let agent = try start(fixture)
        agent.write(UploadTests.readings(0..<5))
        #expect(try backend.waitForUnique(5) == 5, "\(agent.stderr.suffix(2000))")
        // The backend forgets the tokens and refuses refreshes: the agent logs in again.
        try backend.control("expire-tokens")
        try backend.control("refuse-refresh")
        agent.write(UploadTests.readings(5..<10))
        #expect(try backend.waitForUnique(10) == 10, "\(agent.stderr.suffix(2000))")
        #expect(eventually { (try? fixture.status())?["open_state"] as? String == "open" })
        #expect(agent.terminate() == 0)
        let stats = try backend.stats()
        #expect(stats["logins"] as? Int == 2)
        #expect(stats["duplicates"] as? Int == 0)
        #expect(!agent.stderr.contains("gw-secret-key"))
        let cache = fixture.stateDirectory + "/identity/users.json"
        let mode = (try FileManager.default.attributesOfItem(atPath: cache)[.posixPermissions] as! NSNumber).intValue
        #expect(mode == 0o600)
    }

    @Test func aRefusedLoginWaitsForTheUserAndKeepsEverything() throws {
        let backend = try TestBackend(["--auth", "--api-key", "right"])
        let keys = try TemporaryDirectory()
        let fixture = try apiKeyFixture(backend, key: "not-the-key-5c1d", keys: keys)
        let agent = try start(fixture)
        agent.write(UploadTests.readings(0..<3))
        #expect(
            eventually { (try? fixture.status())?["open_state"] as? String == "waiting_for_user" },
            "\(agent.stderr.suffix(2000))"
        )
        #expect(try fixture.status()["state"] as? String == "waiting_for_user")
        #expect(try fixture.status()["queued_records"] as? Int == 3)
        #expect(agent.terminate() == 0)
        #expect(!agent.stderr.contains("not-the-key-5c1d"), "the key is never logged")
    }

    /// An agent in client-reset `mode` that uploaded 5 readings, after which
    /// the backend lost its session.
    func agentWhoseSessionIsLost(mode: String) throws -> (TestBackend, AgentFixture) {
        let backend = try TestBackend()
        let fixture = try UploadTests.fixture(backend, "\n[client_reset]\nmode = \"\(mode)\"")
        do {
            let agent = try start(fixture)
            agent.write(UploadTests.readings(0..<5))
            #expect(try backend.waitForUnique(5) == 5)
            #expect(agent.terminate() == 0)
        }
        try backend.control("lose-sessions")
        return (backend, fixture)
    }

    @Test func aManualClientResetHoldsEverythingUntilIngestdResetRecover() throws {
        let (backend, fixture) = try agentWhoseSessionIsLost(mode: "manual")
        do {
            let agent = try start(fixture)
            agent.write(UploadTests.readings(5..<10))
            #expect(
                eventually { ((try? fixture.status())?["upload_reason"] as? String)?.contains("client reset") == true },
                "\(agent.stderr.suffix(2000))"
            )
            #expect(try fixture.status()["open_state"] as? String == "error")
            #expect(agent.terminate() == 0)
        }
        #expect(try fixture.status()["queued_records"] as? Int == 5)
        #expect(try fixture.run(["reset"]).status == 64)
        let reset = try fixture.run(["reset", "--recover"])
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(reset.stdout.contains("re-sent under a new session"))
        let agent = try start(fixture)
        #expect(try backend.waitForUnique(10) == 10, "\(agent.stderr.suffix(2000))")
        #expect(agent.terminate() == 0)
        #expect((try backend.stats()["sessions"] as? [String])?.count == 2)
        #expect(try fixture.run(["reset", "--recover"]).stdout.contains("No client reset is pending"))
    }

    @Test func aDiscardClientResetBacksUpTheQueuedReadingsAndCountsThem() throws {
        let (backend, fixture) = try agentWhoseSessionIsLost(mode: "discard")
        let agent = try start(fixture)
        agent.write(UploadTests.readings(5..<12))
        #expect(
            eventually { ((try? fixture.status())?["dropped_by_reason"] as? [String: Int])?["client_reset"] == 7 },
            "\(agent.stderr.suffix(2000))"
        )
        // Uploading goes on under the new session.
        agent.write(UploadTests.readings(12..<15))
        #expect(try backend.waitForUnique(8) == 8)
        #expect(agent.terminate() == 0)
        let backups = try FileManager.default.contentsOfDirectory(
            atPath: fixture.stateDirectory + "/client-reset-backups"
        )
        .filter { $0.hasSuffix(".ingest.sqlite") }
        try #require(backups.count == 1)
        let kept = try fixture.queuedLinesAt(fixture.stateDirectory + "/client-reset-backups/" + backups[0])
        #expect(kept.count == 7)
        #expect(kept.allSatisfy { $0.contains("\"_id\"") })
    }

    @Test func aBoxWithNoNetworkExportsAndAnotherImportsAndUploads() throws {
        let offline = try AgentFixture()
        let run = try offline.run(["run"], stdin: Data(UploadTests.readings(0..<20).utf8))
        #expect(run.status == 0, "\(run.stderr)")
        let file = offline.dir.file("carry.ingest.sqlite")
        let export = try offline.run(["export", "--out", file])
        #expect(export.status == 0, "\(export.stderr)")
        #expect(export.stdout == "Exported 20 readings to \(file).\n")
        #expect(export.stderr.isEmpty, "no progress display in a pipe")
        // On a terminal (script(1) gives the command a pseudo-terminal) it shows progress.
        let onTTY = try IngestdBinary.runOnTerminal([
            "export", "--config", offline.configPath, "--out", offline.dir.file("tty.ingest.sqlite"),
        ])
        #expect(onTTY.contains("20/20 exported (100 %)"), "\(onTTY)")
        #expect(try offline.run(["export", "--out", file]).status == 64, "an existing file is never overwritten")
        let mode = (try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as! NSNumber).intValue
        #expect(mode == 0o600)

        let backend = try TestBackend()
        let online = try UploadTests.fixture(backend)
        let imported = try online.run(["import", file])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout == "Imported 20 readings from \(file).\n")
        // status shows the import at once, before the agent runs again.
        #expect(try online.status()["queued_records"] as? Int == 20)
        // The same file again is refused: its readings are not queued twice.
        let again = try online.run(["import", file])
        #expect(again.status == 65, "\(again.stderr)")
        #expect(
            again.stderr.contains("was imported into this queue before (20 readings imported at "),
            "\(again.stderr)"
        )
        #expect(try online.status()["queued_records"] as? Int == 20)
        let drained = try online.run(["run"], stdin: Data())
        #expect(drained.status == 0, "\(drained.stderr)")
        #expect(try backend.waitForUnique(20) == 20)

        // The offline box still has its copy; --move takes it out, counted.
        let moved = try offline.run(["export", "--out", offline.dir.file("second.ingest.sqlite"), "--move"])
        #expect(moved.status == 0)
        #expect(try offline.queuedLines().isEmpty)
        #expect(try offline.status()["queued_records"] as? Int == 0, "status shows the move at once")
        #expect((try offline.status()["dropped_by_reason"] as? [String: Int])?["exported"] == 20)
        // The agent's next run reports the move in its counters.
        #expect(try offline.run(["run"], stdin: Data()).status == 0)
        #expect((try offline.status()["dropped_by_reason"] as? [String: Int])?["exported"] == 20)
        // Uploading the second copy too: the backend sees the same _ids and stores nothing twice.
        #expect(try online.run(["import", offline.dir.file("second.ingest.sqlite")]).status == 0)
        #expect(try online.run(["run"], stdin: Data()).status == 0)
        let stats = try backend.stats()
        #expect(stats["unique"] as? Int == 20)
        #expect(stats["duplicates"] as? Int == 20)
    }
}
