import Foundation

/// A real InfluxDB 1.x server (Debian 12's influxdb, 1.6.7) in its own
/// temporary directory, HTTP without authentication on a loopback port the
/// kernel chose (its backup service on another), no reporting, no
/// self-monitoring. Killed when released.
///
///     let server = try InfluxDBServer()
///     try server.query("CREATE DATABASE telemetry")
///     let url = server.writeURL(database: "telemetry")     // http://127.0.0.1:PORT/write?db=telemetry
///     let rows = try server.rows("SELECT * FROM weather", database: "telemetry")
public final class InfluxDBServer {
    public static let executable = "/usr/bin/influxd"
    public let engine: EngineProcess

    public var url: String { "http://127.0.0.1:\(engine.port)" }

    /// The line protocol endpoint for `database`, for `upload.url`.
    public func writeURL(database: String) -> String { url + "/write?db=\(database)" }

    public init() throws {
        let directory = try TemporaryDirectory()
        let dir = directory.path
        try """
        reporting-enabled = false
        bind-address = "127.0.0.1:0"
        [meta]
          dir = "\(dir)/meta"
        [data]
          dir = "\(dir)/data"
          wal-dir = "\(dir)/wal"
          query-log-enabled = false
        [monitor]
          store-enabled = false
        [http]
          enabled = true
          bind-address = "127.0.0.1:0"
          log-enabled = false
          max-row-limit = 0
        [continuous_queries]
          enabled = false
        """.write(toFile: directory.file("influxdb.conf"), atomically: false, encoding: .utf8)
        engine = try EngineProcess(
            "InfluxDB",
            executable: Self.executable,
            package: "influxdb",
            directory: directory,
            arguments: ["run", "-config", directory.file("influxdb.conf")]
        ) { port in
            // The HTTP port answers /ping with 204; the backup service's port does not speak HTTP.
            httpStatus("http://127.0.0.1:\(port)/ping", timeout: 1) == 204
        }
    }

    /// Runs InfluxQL (`POST /query`, times as epoch milliseconds) and
    /// returns the first result; throws when InfluxDB reports an error.
    @discardableResult
    public func query(_ influxQL: String, database: String? = nil) throws -> [String: Any] {
        let form = "q=\(formEncoded(influxQL))&epoch=ms" + (database.map { "&db=\(formEncoded($0))" } ?? "")
        let answer = try httpRequest(
            "POST",
            url + "/query",
            headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: Array(form.utf8)
        )
        let result = (answer.json["results"] as? [[String: Any]])?.first
        guard answer.status == 200, let result, result["error"] == nil else {
            throw ToolFailure(
                "InfluxDB answered \(answer.status) to \(influxQL.prefix(200)): \(answer.text.prefix(2000))"
            )
        }
        return result
    }

    /// The rows a query returns, each as column name → value (`time` in
    /// epoch milliseconds), over every series it returns.
    public func rows(_ influxQL: String, database: String) throws -> [[String: Any]] {
        let series = try query(influxQL, database: database)["series"] as? [[String: Any]] ?? []
        return series.flatMap { series -> [[String: Any]] in
            let columns = series["columns"] as? [String] ?? []
            let tags = series["tags"] as? [String: Any] ?? [:]
            return (series["values"] as? [[Any]] ?? []).map { values in
                var row = tags
                for (column, value) in zip(columns, values) { row[column] = value }
                return row
            }
        }
    }

    /// The server's version, from its /ping answer's header: 1.6.7~rc0.
    public var version: String {
        guard
            let result = try? runTool("/usr/bin/curl", ["-sI", "--max-time", "5", url + "/ping"]),
            let line = result.output.split(separator: "\r\n").first(where: {
                $0.lowercased().hasPrefix("x-influxdb-version:")
            })
        else { return "?" }
        return line.dropFirst("x-influxdb-version:".count).trimmingCharacters(in: .whitespaces)
    }
}
