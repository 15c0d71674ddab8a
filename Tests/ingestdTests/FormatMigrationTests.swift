import Foundation
import TestSupport
import Testing

/// A queue file made by the previous release (format 3: the gateway's
/// received ids and sessions in tables outside the format) is migrated to
/// format 4 when the new release starts on it, and nothing it held is
/// lost, sent twice or forgotten. The file is made by
/// `scripts/make-format3-fixture.sh` with that release's binary: 100
/// readings received from account gw-17 in 2 batches (session
/// `fixture-7`) and 30 from stdin, all queued (its backend was down).
@Suite struct FormatMigrationTests {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/queue-format3-gateway.sqlite").path

    /// The fixture's first batch, as the script sent it.
    static let firstBatch = (0..<50).map {
        String(
            format:
                #"{"_id":"65f1c2a9e1b2c3d4e5f7%04x","deviceId":"F%d","temperatureInFahrenheit":%d.5,"barometricPressureInHg":29.9,"windSpeedInMph":%d}"#,
            $0,
            $0,
            $0,
            $0
        ) + "\n"
    }.joined()

    @Test func aGatewaysFileFromThePreviousReleaseIsMigratedWithEverythingItHeld() throws {
        #expect(try sqlite3(Self.fixture, "PRAGMA user_version") == "3")
        let gateway = try HTTPInputTests.Gateway(queueFile: Self.fixture)
        defer { _ = gateway.agent.terminate() }
        // Every queued reading is delivered once, under its own _id.
        #expect(gateway.waitUntilArchived(130), "\(gateway.agent.stderr.suffix(2000))")
        #expect(try sqlite3(gateway.archive, "SELECT count(DISTINCT _id) FROM WeatherSensor") == "130")
        let queue = gateway.fixture.stateDirectory + "/queue.sqlite"
        #expect(try sqlite3(queue, "PRAGMA user_version") == "4")
        // The gateway still knows what it received before the upgrade…
        let auth = [
            "Authorization": "Bearer " + HTTPInputTests.apiKey, "EdgeIngest-Record-Type": "WeatherSensor",
            "EdgeIngest-Schema-Version": "1",
        ]
        let url = gateway.base + "/ingest/v1/apps/weather/batches"
        let resent = try httpRequest("POST", url, headers: auth, body: Array(Self.firstBatch.utf8))
        #expect(
            resent.status == 200 && resent.json["accepted"] as? Int == 0 && resent.json["duplicate"] as? Int == 50,
            "\(resent.text)"
        )
        // …and who spoke to it: an older session of that client must reset.
        let stale = try httpRequest(
            "POST",
            url,
            headers: auth.merging(["EdgeIngest-Session": "fixture-6"]) { $1 },
            body: Array(HTTPInputTests.line("65f1c2a9e1b2c3d4e5f79999", device: "N").utf8)
        )
        #expect(stale.status == 409 && stale.json["error"] as? String == "client_reset_required", "\(stale.text)")
        // New readings get format 4's acceptance data; the file verifies.
        let fresh = try httpRequest(
            "POST",
            url,
            headers: auth,
            body: Array(HTTPInputTests.line("65f1c2a9e1b2c3d4e5f7a000", device: "NEW").utf8)
        )
        #expect(fresh.json["accepted"] as? Int == 1, "\(fresh.text)")
        #expect(gateway.waitUntilArchived(131))
        let verify = try gateway.fixture.run(["verify"])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        #expect(verify.stdout.contains("rows of received ids and sessions"), "\(verify.stdout)")
        let status = try gateway.fixture.status()
        #expect(status["accepted_total"] as? Int == 131)
        #expect(status["received_duplicates_total"] as? Int == 50)
    }

    /// The previous release's file, started with a second sink added
    /// (issue 41): what it held goes to `[upload]` once, as before (it was
    /// accepted for that sink alone); what arrives from then on goes to
    /// both; nothing stops the box collecting.
    @Test func thePreviousReleasesFileWithASecondSinkAddedLosesNothing() throws {
        let fixture = try AgentFixture(
            """

            [upload]
            sink = "sqlite"
            path = "upload.sqlite"
            linger_ms = 20

            [sinks.second]
            sink = "sqlite"
            path = "second.sqlite"
            linger_ms = 20
            """,
            queue: "schema_version = 1\n"
        )
        try FileManager.default.createDirectory(atPath: fixture.stateDirectory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Self.fixture, toPath: fixture.stateDirectory + "/queue.sqlite")
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write((0..<20).map { reading($0, device: "AFTER\($0)") + "\n" }.joined())
        let count = { (file: String) in
            (try? sqlite3(fixture.stateDirectory + "/" + file, "SELECT count(DISTINCT _id) FROM WeatherSensor")) ?? ""
        }
        let delivered = eventually(timeout: 30) {
            count("upload.sqlite") == "150" && count("second.sqlite") == "20"
                && (try? fixture.status())?["queued_records"] as? Int == 0
        }
        let stderr = agent.stderr
        #expect(agent.terminate() == 0)
        #expect(delivered, "upload \(count("upload.sqlite")), second \(count("second.sqlite"))\n\(stderr.suffix(2000))")
        #expect(try sqlite3(fixture.stateDirectory + "/queue.sqlite", "PRAGMA user_version") == "4")
        let second = try sqlite3(
            fixture.stateDirectory + "/second.sqlite",
            #"SELECT count(*) FROM WeatherSensor WHERE "deviceId" LIKE 'AFTER%'"#
        )
        #expect(second == "20")
        let status = try fixture.status()
        #expect(status["accepted_total"] as? Int == 150 && status["uploaded_total"] as? Int == 150, "\(status)")
    }

    /// A damaged file of the previous format is rebuilt too, into this one:
    /// what can be read is kept (the gateway's groups and session among it),
    /// what cannot is counted, and the result verifies.
    @Test func aDamagedFileOfThePreviousFormatIsRebuiltIntoThisOne() throws {
        let fixture = try AgentFixture(
            "[upload]\nurl = \"http://127.0.0.1:9/nobody\"\n",
            queue: "schema_version = 1\n"
        )
        try FileManager.default.createDirectory(atPath: fixture.stateDirectory, withIntermediateDirectories: true)
        let queue = fixture.stateDirectory + "/queue.sqlite"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: Self.fixture))
        // A flipped bit in the header's format number (3 → 1: a higher one
        // would be taken for a newer version's file) and a torn last page.
        bytes[63] ^= 0x02
        bytes = bytes.prefix(bytes.count - 1000)
        try bytes.write(to: URL(fileURLWithPath: queue))
        let repair = try fixture.run(["repair"])
        #expect(repair.status == 65, "\(repair.stdout)\(repair.stderr)")
        #expect(repair.stdout.contains("rebuilt the file from what could be read"), "\(repair.stdout)")
        #expect(try sqlite3(queue, "PRAGMA user_version") == "4")
        let verify = try fixture.run(["verify"])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        // Every reading the file held is queued, or counted as lost.
        let status = try fixture.status()
        let queued = status["queued_records"] as? Int ?? -1
        let dropped = (status["dropped_by_reason"] as? [String: Int])?["damaged"] ?? 0
        let quarantined = status["quarantined_records"] as? Int ?? 0
        #expect(queued + dropped + quarantined == 130, "\(status)")
        #expect(queued > 0)
    }
}
