import Foundation

/// The scriptable Python ingest backend (Tests/Support/ingest-test-server.py),
/// on a loopback port chosen by the kernel. Stopped when released.
public final class TestBackend {
    let script: SupportScript
    public let port: Int
    /// Plain HTTP port for /stats (the same as `port` unless serving TLS).
    public let controlPort: Int
    public var url: String { "http://127.0.0.1:\(port)/ingest/v1/batches" }

    public init(_ arguments: [String] = []) throws {
        script = try SupportScript("ingest-test-server.py", arguments)
        port = script.ports[0]
        controlPort = script.ports.count > 1 ? script.ports[1] : script.ports[0]
    }

    /// The server's counters.
    public func stats() throws -> [String: Any] {
        try fetchJSON("http://127.0.0.1:\(controlPort)/stats")
    }

    /// The base URL for an ``App``: `http://127.0.0.1:<port>`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Scripts the running server: `expire-tokens`, `refuse-refresh`,
    /// `lose-sessions` (see the script's help).
    public func control(_ action: String, body: String = "") throws {
        _ = try fetchJSON("http://127.0.0.1:\(controlPort)/control/\(action)", method: "POST", body: body)
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
