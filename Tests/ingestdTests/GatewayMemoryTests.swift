import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A gateway's memory — the ids it received and its clients' sessions —
/// is part of the queue format (4): checked at open, by `verify`, kept by
/// `repair` and by the repair `run` does by itself. Without it, a batch
/// received and uploaded before the damage is stored again when a client
/// re-sends it, and a client restored from an old backup is accepted
/// instead of told to reset. Through the built binary.
@Suite(.serialized) struct GatewayMemoryTests {
    enum Damage: String, CustomStringConvertible, CaseIterable {
        /// The header's application id and format number (12 bytes at
        /// offset 60) zeroed: SQLite reads the file whole, ours refused it.
        case zeroedHeader
        /// One flipped bit in the stored `CREATE` text of
        /// `received_groups_0`: `members` becomes `mdmbers`.
        case flippedCreateText

        var description: String { rawValue }

        func apply(to path: String) throws {
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            switch self {
            case .zeroedHeader:
                for offset in 60..<72 { bytes[offset] = 0 }
            case .flippedCreateText:
                let needle = Array("received_groups_0(key BLOB PRIMARY KEY, members".utf8)
                guard let at = Self.find(needle, in: bytes) else {
                    throw ToolFailure("no CREATE text of received_groups_0 in the file")
                }
                bytes[at + needle.count - 6] ^= 0x01  // "members" → "mdmbers"
            }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }

        static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
            guard haystack.count >= needle.count else { return nil }
            return (0...(haystack.count - needle.count)).first {
                haystack[$0..<$0 + needle.count].elementsEqual(needle)
            }
        }
    }

    static let auth = [
        "Authorization": "Bearer " + HTTPInputTests.apiKey, "EdgeIngest-Record-Type": "WeatherSensor",
        "EdgeIngest-Schema-Version": "1",
    ]

    /// 40 readings with their own counting `_id`s.
    static let batch = (0..<40).map {
        HTTPInputTests.line(String(format: "65f1c2a9e1b2c3d4e5f6%04x", $0), device: "M\($0)")
    }.joined()

    /// Ids alone in their 128-id bucket (random ids) are pending for up to
    /// a second before they are folded into runs: a kill -9 in that second
    /// must not make the gateway forget them (they are in
    /// `received_pending`, written with their batch).
    /// The gateway again, on the same port (its agent stopped), once it answers.
    static func restart(_ gateway: HTTPInputTests.Gateway) throws -> RunningAgent {
        let config = try String(contentsOfFile: gateway.fixture.configPath, encoding: .utf8)
        try config.replacingOccurrences(of: "listen = \"127.0.0.1:0\"", with: "listen = \"127.0.0.1:\(gateway.port)\"")
            .write(toFile: gateway.fixture.configPath, atomically: true, encoding: .utf8)
        let again = try RunningAgent(
            arguments: ["run", "--config", gateway.fixture.configPath],
            environment: IngestdBinary.environment,
            stdinFile: "/dev/null"
        )
        #expect(
            eventually { (try? httpRequest("GET", gateway.base + "/healthz"))?.status == 200 },
            "\(again.stderr.suffix(2000))"
        )
        return again
    }

    @Test func randomIDsReceivedJustBeforeAKillAreRememberedAfterIt() throws {
        let gateway = try HTTPInputTests.Gateway()
        let url = gateway.base + "/ingest/v1/apps/weather/batches"
        let batch = (0..<40).map { i in
            HTTPInputTests.line(
                "65f1c2a9" + String(format: "%02x", i % 4) + String(format: "%014x", i * 1_000_003),
                device: "R\(i)"
            )
        }.joined()
        let first = try httpRequest("POST", url, headers: Self.auth, body: Array(batch.utf8))
        #expect(first.status == 200 && first.json["accepted"] as? Int == 40, "\(first.text)")
        kill(gateway.agent.process.processIdentifier, SIGKILL)
        gateway.agent.process.waitUntilExit()
        let queue = gateway.fixture.stateDirectory + "/queue.sqlite"
        #expect(try sqlite3(queue, "SELECT sum(length(ids)) / 12 FROM received_pending") == "40")

        let again = try Self.restart(gateway)
        defer { _ = again.terminate() }
        // The client never saw its answer and sends the batch again: stored once.
        let resent = try httpRequest("POST", url, headers: Self.auth, body: Array(batch.utf8))
        #expect(
            resent.json["accepted"] as? Int == 0 && resent.json["duplicate"] as? Int == 40,
            "\(resent.text)"
        )
        #expect(gateway.waitUntilArchived(40), "\(again.stderr.suffix(2000))")
        #expect(again.terminate() == 0)
        // Closed: folded into runs.
        #expect(try sqlite3(queue, "SELECT count(*) FROM received_pending") == "0")
        #expect(try sqlite3(queue, "SELECT sum(length(ids)) / 7 FROM received_runs_0") == "40")
    }

    @Test(arguments: Damage.allCases)
    func aRepairedQueueStillKnowsWhatItReceivedAndWhoSpokeToIt(_ damage: Damage) throws {
        let gateway = try HTTPInputTests.Gateway()
        let url = gateway.base + "/ingest/v1/apps/weather/batches"
        let first = try httpRequest(
            "POST",
            url,
            headers: Self.auth.merging(["EdgeIngest-Session": "backup-5"]) { $1 },
            body: Array(Self.batch.utf8)
        )
        #expect(first.status == 200 && first.json["accepted"] as? Int == 40, "\(first.text)")
        #expect(gateway.waitUntilArchived(40), "\(gateway.agent.stderr.suffix(2000))")
        #expect(gateway.agent.terminate() == 0)

        let queue = gateway.fixture.stateDirectory + "/queue.sqlite"
        #expect(try sqlite3(queue, "SELECT count(*) FROM received_groups_0") != "0")
        try damage.apply(to: queue)
        let verify = try gateway.fixture.run(["verify"])
        #expect(verify.status == 65, "\(damage): \(verify.stdout)\(verify.stderr)")
        switch damage {
        case .zeroedHeader:
            break  // `run` repairs it by itself
        case .flippedCreateText:
            let repair = try gateway.fixture.run(["repair"])
            #expect(repair.status == 65, "\(repair.stdout)\(repair.stderr)")
            #expect(repair.stdout.contains("put back the damaged definition of 1 tables"), "\(repair.stdout)")
        }

        let again = try Self.restart(gateway)
        defer { _ = again.terminate() }
        if damage == .zeroedHeader {
            #expect(again.stderr.contains("Repaired the damaged queue file"), "\(again.stderr.suffix(2000))")
        }
        // The same batch re-sent (its acknowledgement was lost): stored once.
        let resent = try httpRequest("POST", url, headers: Self.auth, body: Array(Self.batch.utf8))
        #expect(
            resent.json["accepted"] as? Int == 0 && resent.json["duplicate"] as? Int == 40,
            "\(damage): \(resent.text)"
        )
        // A client restored from an older backup (epoch 4 < 5) is told to reset.
        let stale = try httpRequest(
            "POST",
            url,
            headers: Self.auth.merging(["EdgeIngest-Session": "backup-4"]) { $1 },
            body: Array(HTTPInputTests.line("65f1c2a9e1b2c3d4e5f69999", device: "N").utf8)
        )
        #expect(stale.status == 409 && stale.json["error"] as? String == "client_reset_required", "\(stale.text)")
        #expect(try gateway.fixture.run(["verify"]).status == 0)
        #expect(try sqlite3(gateway.archive, "SELECT count(*) FROM WeatherSensor") == "40")
    }
}
