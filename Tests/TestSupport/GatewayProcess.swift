import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The built `ingestd` serving the ingest protocol on a loopback port the
/// kernel picks: the backend a Realm-shaped app logs in to and streams to
/// (an `http` input, anonymous and email/password logins, the SQLite
/// archive as its sink). Stopped (SIGTERM) when released, or when the test
/// process ends without releasing it.
///
///     let gateway = try GatewayProcess(types: GatewayProcess.weatherSensor)
///     let app = App(id: GatewayProcess.appID, configuration: AppConfiguration(baseURL: gateway.baseURL))
public final class GatewayProcess {
    public static let appID = "weather"
    public static let email = "sensor@example.com"
    public static let password = "correct horse battery staple"
    /// The seeds' WeatherSensor, declared for the gateway.
    public static let weatherSensor = """
        [types.WeatherSensor]
        deviceId = "string"
        temperatureInFahrenheit = "double"
        barometricPressureInHg = "double"
        windSpeedInMph = "int"
        """

    public let dir: TemporaryDirectory
    public let baseURL: String
    private let process = Process()
    private let stderrPath: String
    /// Its write end held here only: closed, the gateway is stopped.
    private let lifeline = Pipe()

    /// `sh -c` text running `$0 run --config $1` until SIGTERM or until its
    /// standard input (the lifeline) reaches end of file; the gateway
    /// itself gets neither.
    private static let stoppedWithLifeline = """
        exec 3<&0 </dev/null
        "$0" run --config "$1" 3<&- &
        gateway=$!
        trap 'kill -TERM $gateway' TERM
        (cat >/dev/null; kill -TERM $gateway 2>/dev/null) <&3 &
        exec 3<&-
        wait $gateway || wait $gateway
        """

    /// - Parameters:
    ///   - types: `[types.…]` sections of the gateway's configuration.
    ///   - schemaVersion: the gateway's `queue.schema_version` (a client
    ///     with a newer one is told to reset, `schema_too_new`).
    public init(types: String, schemaVersion: Int = 0) throws {
        dir = try TemporaryDirectory()
        let binary = Self.ingestd
        let hash = Process()
        hash.executableURL = URL(fileURLWithPath: binary)
        hash.arguments = ["hash-secret"]
        let input = Pipe()
        let output = Pipe()
        hash.standardInput = input
        hash.standardOutput = output
        try hash.run()
        input.fileHandleForWriting.write(Data((Self.password + "\n").utf8))
        try input.fileHandleForWriting.close()
        let hashed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        hash.waitUntilExit()
        try "\(Self.email) \(hashed.trimmingCharacters(in: .whitespacesAndNewlines))\n"
            .write(toFile: dir.file("users"), atomically: true, encoding: .utf8)
        let config = """
            [agent]
            state_directory = "\(dir.file("state"))"
            log_target = "stderr"
            status_interval_ms = 100

            [queue]
            schema_version = \(schemaVersion)

            [upload]
            sink = "sqlite"
            path = "\(dir.file("archive.sqlite"))"
            linger_ms = 20

            \(types)

            [[inputs]]
            kind = "http"
            listen = "127.0.0.1:0"
            app_id = "\(Self.appID)"
            anonymous = true
            users_file = "\(dir.file("users"))"
            shared_id_space = true
            """
        try config.write(toFile: dir.file("ingestd.toml"), atomically: true, encoding: .utf8)
        stderrPath = dir.file("stderr")
        FileManager.default.createFile(atPath: stderrPath, contents: nil)
        // Through a shell that stops the gateway when this process's end of
        // `lifeline` closes: on release, and also when the test process
        // exits without releasing it (a shared fixture's gateway was left
        // running for hours, reparented to init).
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", Self.stoppedWithLifeline, binary, dir.file("ingestd.toml")]
        var environment = ProcessInfo.processInfo.environment
        for name in ["NOTIFY_SOCKET", "WATCHDOG_USEC", "JOURNAL_STREAM", "STATE_DIRECTORY", "CREDENTIALS_DIRECTORY"] {
            environment[name] = nil
        }
        process.environment = environment
        process.standardInput = lifeline
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle(forWritingAtPath: stderrPath)
        try process.run()
        var listen: String?
        let process = self.process
        let dir = self.dir
        _ = eventually {
            guard process.isRunning else { return true }
            let status = try? JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: dir.file("state/status.json")))
            )
            listen = ((status as? [String: Any])?["inputs"] as? [[String: Any]])?.first?["listen"] as? String
            return listen != nil
        }
        guard let listen else {
            let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? ""
            try? lifeline.fileHandleForWriting.close()
            kill(process.processIdentifier, SIGTERM)
            throw ToolFailure("the gateway did not start listening: \(log.suffix(2000))")
        }
        baseURL = "http://\(listen)"
    }

    deinit {
        // Closing the lifeline is the stop (the wrapper sends SIGTERM); a
        // second SIGTERM here would only reach the gateway again.
        try? lifeline.fileHandleForWriting.close()
        if process.isRunning {
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning, Date() < deadline { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
    }

    /// What the gateway logged.
    public var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// The `_id`s (hex) the gateway's sink stored in table `type`, sorted.
    public func archivedIDs(_ type: String = "WeatherSensor") throws -> [String] {
        let path = dir.file("archive.sqlite")
        guard FileManager.default.fileExists(atPath: path) else { return [] }
        let text = try sqlite3(path, "SELECT _id FROM \"\(type)\" ORDER BY _id")
        return text.isEmpty ? [] : text.split(separator: "\n").map(String.init)
    }

    /// Waits (30 s at most) until table `type` holds `count` records; returns how many it holds.
    public func waitUntilArchived(_ count: Int, _ type: String = "WeatherSensor") -> Int {
        var seen = 0
        _ = eventually(timeout: 30) {
            seen = (try? archivedIDs(type).count) ?? 0
            return seen >= count
        }
        return seen
    }

    /// The gateway's counters (`ingestd status --json`'s `inputs[0]`).
    public func inputStatus() throws -> [String: Any] {
        let status = try JSONSerialization.jsonObject(
            with: Data(contentsOf: URL(fileURLWithPath: dir.file("state/status.json")))
        )
        return ((status as? [String: Any])?["inputs"] as? [[String: Any]])?.first ?? [:]
    }

    /// The `ingestd` built beside the tests.
    static var ingestd: String {
        if let path = ProcessInfo.processInfo.environment["INGESTD_BINARY"], !path.isEmpty { return path }
        return builtExecutable("ingestd")
    }
}
