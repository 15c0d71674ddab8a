import Foundation

/// A real PostgreSQL server (Debian's postgresql-15 binaries) in its own
/// temporary directory, listening on a loopback port the kernel chose, with
/// SCRAM password authentication for TCP clients. Run as the `postgres`
/// user when the tests run as root (initdb refuses root). Stopped with
/// `pg_ctl stop -m immediate` and removed when released.
///
///     let server = try PostgresServer()
///     let url = server.url                       // postgresql://ingest@127.0.0.1:PORT/telemetry
///     try server.psql("SELECT count(*) FROM \"WeatherSensor\"")
public final class PostgresServer {
    public let directory: TemporaryDirectory
    public let port: Int
    public let user = "ingest"
    public let password = "s3cret-\(UInt32.random(in: 0...UInt32.max))"
    /// A file holding only the password (for `upload.password_file`).
    public let passwordFile: String
    let bin: String
    let data: String

    /// `postgresql://ingest@127.0.0.1:PORT/telemetry` (no password in it).
    public var url: String { "postgresql://\(user)@127.0.0.1:\(port)/telemetry" }

    public init() throws {
        guard
            let version = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?.sorted().last,
            FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/\(version)/bin/initdb")
        else {
            throw ToolFailure(
                "PostgreSQL's server is not installed (/usr/lib/postgresql/*/bin/initdb): apt-get install postgresql-15"
            )
        }
        bin = "/usr/lib/postgresql/\(version)/bin/"
        directory = try TemporaryDirectory()
        data = directory.file("data")
        passwordFile = directory.file("password")
        do { port = try SilentListener().port }  // a free port, closed again
        try password.write(toFile: passwordFile, atomically: false, encoding: .utf8)
        if getuid() == 0 {
            _ = try runTool("/bin/chown", ["-R", "postgres:postgres", directory.path])
        }
        try run(
            "initdb",
            [
                "-D", data, "-U", user, "--pwfile=\(passwordFile)", "--auth-host=scram-sha-256", "--auth-local=trust",
                "-E", "UTF8",
                "--locale=C", "--no-sync",
            ]
        )
        try start()
        try psql("CREATE DATABASE telemetry", database: "postgres")
    }

    /// Starts (or restarts) the server and waits until it accepts connections.
    /// Not through ``runTool``: the server would inherit its pipe (and any
    /// other test's pipe open at that moment), so pg_ctl's output goes to a
    /// file and every descriptor above stderr is closed before exec.
    public func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        let pgctl = (getuid() == 0 ? "exec /usr/sbin/runuser -u postgres -- " : "exec ") + bin + "pg_ctl"
        // Closing every descriptor above 2 in the shell keeps those other threads opened
        // (pipes of concurrent tests) out of the long-lived server.
        process.arguments = [
            "-c",
            "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd>&-\"; done 2>/dev/null; \(pgctl) \"$@\"",
            "bash",
            "-D", data, "-l", directory.file("server.log"), "-w", "-t", "30", "start",
            "-o", "-c listen_addresses=127.0.0.1 -p \(port) -k \(directory.path) -c fsync=on",
        ]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ToolFailure("pg_ctl start failed (\(process.terminationStatus)): \(log.suffix(2000))")
        }
    }

    /// Stops the server at once (like a crash: no checkpoint).
    public func stop() throws {
        try run("pg_ctl", ["-D", data, "-w", "-m", "immediate", "stop"])
    }

    /// Runs `sql` as the superuser over the server's Unix socket and returns
    /// the rows as `psql -At` prints them (columns joined by `|`).
    @discardableResult
    public func psql(_ sql: String, database: String = "telemetry") throws -> String {
        let result = try runAsServerUser(
            bin + "psql",
            [
                "-h", directory.path, "-p", String(port), "-U", user, "-d", database, "-At", "-v", "ON_ERROR_STOP=1",
                "-c", sql,
            ]
        )
        guard result.status == 0 else { throw ToolFailure("psql \(sql.prefix(80)) failed: \(result.output)") }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The server's log, for failure messages.
    public var log: String { (try? String(contentsOfFile: directory.file("server.log"), encoding: .utf8)) ?? "" }

    private func run(_ tool: String, _ arguments: [String]) throws {
        let result = try runAsServerUser(bin + tool, arguments)
        guard result.status == 0 else {
            throw ToolFailure("\(tool) failed (\(result.status)): \(result.output)\n\(log.suffix(2000))")
        }
    }

    private func runAsServerUser(_ executable: String, _ arguments: [String]) throws -> ToolResult {
        if getuid() == 0 { return try runTool("/usr/sbin/runuser", ["-u", "postgres", "--", executable] + arguments) }
        return try runTool(executable, arguments)
    }

    deinit {
        _ = try? runAsServerUser(bin + "pg_ctl", ["-D", data, "-m", "immediate", "stop"])
    }
}
