import Foundation
import TestSupport
import Testing

/// A real pseudo-terminal pair: the agent reads the slave side through a
/// symlink (like /dev/serial/by-id/…); the test writes into the master.
final class PseudoTerminal {
    let master: Int32
    let slavePath: String

    init() throws {
        // What posix_openpt + unlockpt + ptsname do, through the ioctls.
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard master >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var unlock: Int32 = 0
        var number: UInt32 = 0
        let TIOCSPTLCK: UInt = 0x4004_5431
        let TIOCGPTN: UInt = 0x8004_5430
        guard ioctl(master, TIOCSPTLCK, &unlock) == 0, ioctl(master, TIOCGPTN, &number) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        slavePath = "/dev/pts/\(number)"
    }

    func write(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(master, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 { break }
            offset += n
        }
    }

    /// Unplugs: the agent's side sees a hangup.
    func close() { Glibc.close(master) }
}

@Suite(.serialized) struct SerialInputTests {
    static func waitFor(_ text: String, count: Int = 1, in agent: RunningAgent, timeout: Double = 15) -> Bool {
        eventually(timeout: timeout) { agent.stderr.components(separatedBy: text).count - 1 >= count }
    }

    @Test func readingsArriveAcrossAnUnplugAndReplug() throws {
        let dir = try TemporaryDirectory()
        let link = dir.file("ttyUSB0")
        var pty = try PseudoTerminal()
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: pty.slavePath)
        let fixture = try AgentFixture(
            "",
            inputs: """
                [[inputs]]
                kind = "serial"
                device = "\(link)"
                baud = 115200
                """
        )
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        #expect(Self.waitFor("Serial device opened", in: agent), "\(agent.stderr)")

        // CR/LF line endings, as many serial sensors send.
        for i in 0..<20 { pty.write(reading(i, device: "S\(i)") + "\r\n") }
        #expect(try FileInputTests.waitForAccepted(fixture, 20) == 20)

        // Unplug: the agent commits what it read and starts retrying.
        pty.close()
        #expect(Self.waitFor("Serial device disconnected", in: agent), "\(agent.stderr)")
        usleep(700_000)  // several retries fail against the dead device
        // A device that has gone away holds delivery: status says so (exit 1).
        var status = try fixture.run(["status"])
        _ = try eventually {
            status = try fixture.run(["status"])
            return status.status == 1
        }
        #expect(status.status == 1)
        #expect(status.stdout.contains("its device is gone"), "\(status.stdout)")

        // Replug at the same path.
        pty = try PseudoTerminal()
        try FileManager.default.removeItem(atPath: link)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: pty.slavePath)
        #expect(Self.waitFor("Serial device is back", in: agent), "\(agent.stderr)")
        for i in 20..<35 { pty.write(reading(i, device: "S\(i)") + "\n") }
        #expect(try FileInputTests.waitForAccepted(fixture, 35) == 35)
        #expect(try eventually { try fixture.run(["status"]).status == 0 }, "healthy again once it is back")

        #expect(agent.terminate() == 0, "\(agent.stderr)")
        pty.close()
        let devices = FileInputTests.devices(try fixture.queuedLines())
        #expect(devices == (0..<35).map { "S\($0)" })
        // One outage, logged once: not once per retry.
        let stderr = agent.stderr
        #expect(stderr.components(separatedBy: "Serial device disconnected").count - 1 == 1)
        #expect(stderr.components(separatedBy: "Serial device unavailable").count - 1 <= 1)
        #expect(try fixture.status()["rejected_total"] as? Int == 0)
    }

    @Test func aMissingDeviceAtStartIsRetriedNotFatal() throws {
        let dir = try TemporaryDirectory()
        let link = dir.file("ttyACM0")
        let fixture = try AgentFixture(
            "",
            inputs: "[[inputs]]\nkind = \"serial\"\ndevice = \"\(link)\"\n"
        )
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        #expect(Self.waitFor("Serial device unavailable; retrying with backoff", in: agent))
        let pty = try PseudoTerminal()
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: pty.slavePath)
        #expect(Self.waitFor("Serial device opened", in: agent))
        pty.write(reading(1, device: "late") + "\n")
        #expect(try FileInputTests.waitForAccepted(fixture, 1) == 1)
        #expect(agent.terminate() == 0)
        pty.close()
        #expect(agent.stderr.components(separatedBy: "Serial device unavailable").count - 1 == 1)
    }
}
