import Foundation
import TestSupport
import Testing

/// `queue.encryption_key_file` against the built binary.
@Suite struct QueueEncryptionTests {
    static let secret = "SECRET-STATION-51c2"

    func rawQueue(_ fixture: AgentFixture) -> Data {
        ["", "-wal"].reduce(into: Data()) { all, suffix in
            all += FileManager.default.contents(atPath: fixture.stateDirectory + "/queue.sqlite" + suffix) ?? Data()
        }
    }

    @Test func theAgentEncryptsTheQueueAndRefusesAWrongKeyWithoutTouchingIt() throws {
        let keys = try TemporaryDirectory()
        let key = Data((0..<64).map { UInt8(truncatingIfNeeded: $0 &* 91 &+ 7) })
        try key.write(to: URL(fileURLWithPath: keys.file("queue.key")))
        // The same key as 128 hex digits with a newline, as an operator may write it.
        try (key.map { String(format: "%02x", $0) }.joined() + "\n").write(
            toFile: keys.file("queue.hex"),
            atomically: true,
            encoding: .utf8
        )
        let fixture = try AgentFixture("", queue: "encryption_key_file = \"\(keys.file("queue.key"))\"")
        let readings = (0..<50).map { reading($0, device: Self.secret) + "\n" }.joined()
        let run = try fixture.run(["run"], stdin: Data(readings.utf8))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try fixture.status()["queued_records"] as? Int == 50)
        #expect(rawQueue(fixture).range(of: Data(Self.secret.utf8)) == nil)

        // The hex form of the same key opens it.
        let queuePath = "path = \"\(fixture.stateDirectory)/queue.sqlite\"\n"
        let hex = try AgentFixture("", queue: queuePath + "encryption_key_file = \"\(keys.file("queue.hex"))\"")
        let export = try hex.run(["export", "--out", keys.file("carry.sqlite")])
        #expect(export.status == 0, "\(export.stderr)")
        #expect(export.stdout.hasPrefix("Exported 50 readings"))
        #expect(
            FileManager.default.contents(atPath: keys.file("carry.sqlite"))?.range(of: Data(Self.secret.utf8)) == nil,
            "an export is encrypted too"
        )

        // A wrong key: a clear error, exit 78, the file untouched.
        var wrong = key
        wrong[0] ^= 0xFF
        try wrong.write(to: URL(fileURLWithPath: keys.file("wrong.key")))
        let before = rawQueue(fixture)
        let bad = try AgentFixture("", queue: queuePath + "encryption_key_file = \"\(keys.file("wrong.key"))\"")
        let refused = try bad.run(["run"], stdin: Data(readings.utf8))
        #expect(refused.status == 78)
        #expect(refused.stderr.contains("does not match the one the queue"))
        #expect(rawQueue(fixture) == before)

        // A key file of the wrong size is a configuration error with the key's name.
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: keys.file("short.key")))
        let short = try AgentFixture("", queue: "encryption_key_file = \"\(keys.file("short.key"))\"")
        let check = try short.run(["check-config"])
        #expect(check.status == 78)
        #expect(check.stderr.contains("queue.encryption_key_file") && check.stderr.contains("64 bytes"))
    }
}
