import Foundation
import TestSupport
import Testing

/// The queue's file system fills up: the agent keeps running, says so in
/// status and the log, loses nothing it read, and recovers by itself when
/// space returns. The queue lives on a small tmpfs the test mounts (root).
@Suite(.serialized) struct DiskFullTests {
    static func sh(_ command: String) -> Int32 {
        (try? runTool("/bin/sh", ["-c", command]))?.status ?? -1
    }

    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aFullDiskPausesTheInputAndRecoversWithoutLosingAReading() throws {
        let small = try TemporaryDirectory()
        try #require(Self.sh("mount -t tmpfs -o size=2m tmpfs \(small.path)") == 0, "cannot mount a tmpfs here")
        defer { _ = Self.sh("umount \(small.path)") }
        let filler = small.file("filler")
        try #require(Self.sh("dd if=/dev/zero of=\(filler) bs=1k count=1700") == 0)

        // Stored plain: compressed, 4,000 readings would not fill the disk.
        let fixture = try AgentFixture("\n[queue]\npath = \"\(small.file("queue.sqlite"))\"\ncompression = \"none\"\n")
        // stdin from a file: the paused input stops reading, which must not block the test.
        let input = fixture.dir.file("readings.ndjson")
        try UploadTests.readings(0..<4000).write(toFile: input, atomically: true, encoding: .utf8)
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment,
            stdinFile: input
        )

        // Full: the agent is alive, the status says why (and exits 1).
        var status: [String: Any] = [:]
        #expect(
            eventually(timeout: 20) {
                status = (try? fixture.status()) ?? [:]
                return (status["problem"] as? String)?.contains("disk is full") == true
            },
            "\(status)\n\(agent.stderr.suffix(1500))"
        )
        #expect(agent.process.isRunning)
        #expect(try fixture.run(["status"]).status == 1)
        #expect(
            agent.stderr.components(separatedBy: "The queue's disk is full; retrying").count - 1 == 1,
            "logged once per outage"
        )

        // Space returns: everything read is committed, nothing twice.
        try FileManager.default.removeItem(atPath: filler)
        #expect(eventually(timeout: 30) { (try? fixture.status())?["accepted_total"] as? Int == 4000 })
        // The problem is cleared from a status that can be read (an unreadable one is no proof).
        #expect(eventually { (try? fixture.status()).map { $0["problem"] == nil } == true })
        #expect(agent.stderr.contains("The queue's disk has space again; committing resumed"))
        // At the end of its stdin file the agent exits by itself, 0.
        agent.process.waitUntilExit()
        #expect(agent.process.terminationStatus == 0, "\(agent.stderr.suffix(1500))")
        let devices = FileInputTests.devices(try fixture.queuedLinesAt(small.file("queue.sqlite")))
        #expect(devices.count == 4000)
        #expect(Set(devices).count == 4000)
    }
}
