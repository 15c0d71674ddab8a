import Foundation
import TestSupport
import Testing

/// Accounts are tenants (issue 39): a gateway with accounts whose sink keys
/// rows on `_id` alone would answer a second account's reading under an
/// `_id` another sent first "accepted" and never store it. Such a
/// configuration needs `owner_field` or an explicit `shared_id_space =
/// true`; without either, check-config refuses it and `run` (which must
/// not stop an upgraded box) collects but holds uploads, saying why.
@Suite(.serialized) struct TenantSafetyTests {
    @Test func accountsWithoutAnOwnerFieldHoldUploadsUntilTheSpaceIsNamed() throws {
        let gateway = try HTTPInputTests.Gateway(sharedIDSpace: false)
        let check = try gateway.fixture.run(["check-config"])
        #expect(check.status == 78, "\(check.stdout)\(check.stderr)")
        #expect(check.stderr.contains("has accounts but no owner_field"), "\(check.stderr)")
        #expect(check.stderr.contains("shared_id_space = true"), "\(check.stderr)")

        // Collected, answered, queued — and not uploaded: the reason is in status.
        let url = gateway.base + "/ingest/v1/batches"
        let auth = ["Authorization": "Bearer " + HTTPInputTests.apiKey, "Content-Type": "application/x-ndjson"]
        let body = HTTPInputTests.line("65f1c2a9e1b2c3d4e5f6b001", device: "T1")
        let answer = try httpRequest("POST", url, headers: auth, body: Array(body.utf8))
        #expect(answer.status == 200 && answer.json["accepted"] as? Int == 1, "\(answer.text)")
        #expect(
            eventually {
                ((try? gateway.fixture.status())?["upload_reason"] as? String)?.contains("owner_field") == true
            },
            "\(gateway.agent.stderr.suffix(2000))"
        )
        #expect(try gateway.fixture.status()["queued_records"] as? Int == 1)
        #expect((try? sqlite3(gateway.archive, "SELECT count(*) FROM WeatherSensor")) ?? "0" == "0")
        #expect(gateway.agent.stderr.contains("hold uploads"), "\(gateway.agent.stderr.suffix(2000))")
        #expect(gateway.agent.terminate() == 0)

        // Named: the queued reading goes out.
        let config = try String(contentsOfFile: gateway.fixture.configPath, encoding: .utf8)
        try config.replacingOccurrences(of: "kind = \"http\"", with: "kind = \"http\"\nshared_id_space = true")
            .write(toFile: gateway.fixture.configPath, atomically: true, encoding: .utf8)
        #expect(try gateway.fixture.run(["check-config"]).status == 0)
        let again = try RunningAgent(
            arguments: ["run", "--config", gateway.fixture.configPath],
            environment: IngestdBinary.environment,
            stdinFile: "/dev/null"
        )
        defer { _ = again.terminate() }
        #expect(gateway.waitUntilArchived(1), "\(again.stderr.suffix(2000))")
    }
}
