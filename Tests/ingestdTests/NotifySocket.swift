import Foundation
import Testing

/// A real AF_UNIX datagram socket standing in for systemd's notify socket.
final class NotifySocket {
    let path: String
    private let fd: Int32

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in path.utf8.prefix(raw.count - 1).enumerated() { raw[i] = b }
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The next datagram, or nil after `timeout` seconds.
    func receive(timeout: Double) -> String? {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pfd, 1, Int32(timeout * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
    }

    /// Collects messages until `done` returns true or `timeout` passes.
    func collect(timeout: Double, until done: ([String]) -> Bool) -> [String] {
        var messages: [String] = []
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline, !done(messages) {
            if let m = receive(timeout: max(0.01, deadline.timeIntervalSinceNow)) { messages.append(m) }
        }
        return messages
    }
}

/// ingestd running in the background with stdin held open.
final class RunningAgent {
    let process = Process()
    let stdin = Pipe()
    let stderrURL: URL

    /// - Parameters:
    ///   - stdinFile: read stdin from this file instead of a pipe the test
    ///     writes to (a paused agent must not block the test).
    ///   - launcher: a program (and its arguments) that starts ingestd with
    ///     the rest of the command line: `["/usr/bin/env"]`.
    init(
        arguments: [String],
        environment: [String: String],
        stdinFile: String? = nil,
        launcher: [String] = []
    ) throws {
        stderrURL = FileManager.default.temporaryDirectory.appendingPathComponent("ingestd-stderr-\(UUID())")
        FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        if let program = launcher.first {
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = launcher.dropFirst() + [IngestdBinary.url.path] + arguments
        } else {
            process.executableURL = IngestdBinary.url
            process.arguments = arguments
        }
        process.environment = environment
        if let stdinFile {
            process.standardInput = FileHandle(forReadingAtPath: stdinFile)
        } else {
            process.standardInput = stdin
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        try process.run()
    }

    /// Writes to the agent's stdin. An agent that died makes this fail the
    /// test (EPIPE), not kill the test process (SIGPIPE is ignored here).
    func write(_ text: String) {
        signal(SIGPIPE, SIG_IGN)
        do {
            try stdin.fileHandleForWriting.write(contentsOf: Data(text.utf8))
        } catch {
            Issue.record("the agent is not reading its stdin (it exited?): \(error)\n\(stderr.suffix(2000))")
        }
    }

    func terminate() -> Int32 {
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        return process.terminationStatus
    }

    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: stderrURL)
    }
}
