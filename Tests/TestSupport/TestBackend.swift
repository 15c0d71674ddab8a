import Foundation

/// The scriptable Python ingest backend (Tests/Support/ingest-test-server.py),
/// on a loopback port chosen by the kernel. Stopped when released.
public final class TestBackend {
    let process = Process()
    public let port: Int
    /// Plain HTTP port for /stats (the same as `port` unless serving TLS).
    public let controlPort: Int
    public var url: String { "http://127.0.0.1:\(port)/ingest/v1/batches" }

    public init(_ arguments: [String] = []) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Support/ingest-test-server.py")
        let portFile = FileManager.default.temporaryDirectory.appendingPathComponent("ingest-backend-\(UUID()).port").path
        defer { unlink(portFile) }
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script.path, "--port-file", portFile] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        var ports: [Int] = []
        for _ in 0..<200 where ports.count != 2 {
            ports = ((try? String(contentsOfFile: portFile, encoding: .utf8)) ?? "").split(separator: " ").compactMap { Int($0) }
            if ports.count != 2 { usleep(25_000) }
        }
        guard ports.count == 2 else {
            kill(process.processIdentifier, SIGKILL)
            throw POSIXError(.ETIMEDOUT)
        }
        port = ports[0]
        controlPort = ports[1]
    }

    deinit {
        // SIGKILL: the server keeps no state, and a SIGTERM can arrive
        // ignored (dispositions set to SIG_IGN are inherited across exec).
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// The server's counters (fetched with the curl command: Foundation's
    /// URL loading needs FoundationNetworking on Linux, which we do not link).
    public func stats() throws -> [String: Any] {
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-sS", "--max-time", "5", "http://127.0.0.1:\(controlPort)/stats"]
        let out = Pipe()
        curl.standardOutput = out
        try curl.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        curl.waitUntilExit()
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }

    /// The base URL for an ``App``: `http://127.0.0.1:<port>`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Scripts the running server: `expire-tokens`, `refuse-refresh`,
    /// `lose-sessions` (see the script's help).
    public func control(_ action: String, body: String = "") throws {
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-sS", "--max-time", "5", "-X", "POST", "--data", body, "http://127.0.0.1:\(controlPort)/control/\(action)"]
        curl.standardOutput = FileHandle.nullDevice
        try curl.run()
        curl.waitUntilExit()
    }

    /// Waits until the server holds `count` unique records.
    public func waitForUnique(_ count: Int, timeout: Double = 30) throws -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        var unique = -1
        while Date() < deadline {
            unique = try stats()["unique"] as? Int ?? -1
            if unique >= count { return unique }
            usleep(50_000)
        }
        return unique
    }
}
