import Foundation

/// A real ClickHouse server (Debian 12's clickhouse-server, 18.16) in its
/// own temporary directory, with only its HTTP interface, on a loopback
/// port the kernel chose, user `default` without a password from loopback.
/// Killed when released.
///
///     let server = try ClickHouseServer()
///     try server.query("CREATE DATABASE telemetry")
///     let url = server.url                      // http://127.0.0.1:PORT/
public final class ClickHouseServer {
    public static let executable = "/usr/sbin/clickhouse-server"
    public let engine: EngineProcess

    /// `http://127.0.0.1:PORT/`, for `upload.url`.
    public var url: String { "http://127.0.0.1:\(engine.port)/" }

    public init() throws {
        let directory = try TemporaryDirectory()
        let dir = directory.path
        try """
        <?xml version="1.0"?>
        <yandex>
          <profiles><default></default></profiles>
          <users><default><password></password><networks><ip>127.0.0.1</ip></networks>
            <profile>default</profile><quota>default</quota></default></users>
          <quotas><default></default></quotas>
        </yandex>
        """.write(toFile: directory.file("users.xml"), atomically: false, encoding: .utf8)
        // http_port 0: the kernel chooses; no tcp_port: no native protocol.
        try """
        <?xml version="1.0"?>
        <yandex>
          <logger><level>warning</level><log>\(dir)/clickhouse.log</log><errorlog>\(dir)/clickhouse.err.log</errorlog>
            <size>10M</size><count>1</count></logger>
          <http_port>0</http_port><listen_host>127.0.0.1</listen_host>
          <max_concurrent_queries>16</max_concurrent_queries><mark_cache_size>67108864</mark_cache_size>
          <path>\(dir)/data/</path><tmp_path>\(dir)/tmp/</tmp_path><user_files_path>\(dir)/user_files/</user_files_path>
          <format_schema_path>\(dir)/format_schemas/</format_schema_path>
          <users_config>\(dir)/users.xml</users_config><default_profile>default</default_profile>
          <default_database>default</default_database><mlock_executable>false</mlock_executable>
        </yandex>
        """.write(toFile: directory.file("config.xml"), atomically: false, encoding: .utf8)
        engine = try EngineProcess(
            "ClickHouse",
            executable: Self.executable,
            package: "clickhouse-server",
            directory: directory,
            arguments: ["--config-file=\(directory.file("config.xml"))"]
        ) { port in
            (try? httpRequest("GET", "http://127.0.0.1:\(port)/ping").text) == "Ok.\n"
        }
    }

    /// Runs one statement over HTTP and returns its output (TabSeparated
    /// unless it says `FORMAT`), without the final newline; throws with
    /// ClickHouse's message when it fails.
    @discardableResult
    public func query(_ sql: String) throws -> String {
        let answer = try httpRequest("POST", url, body: Array(sql.utf8))
        guard answer.status == 200 else {
            throw ToolFailure("ClickHouse answered \(answer.status) to \(sql.prefix(200)): \(answer.text)")
        }
        return answer.text.hasSuffix("\n") ? String(answer.text.dropLast()) : answer.text
    }

    /// `SELECT version()`: 18.16.1 from Debian 12.
    public var version: String { (try? query("SELECT version()")) ?? "?" }

    /// The server's own log, for failure messages.
    public var log: String {
        engine.log + ((try? String(contentsOfFile: engine.directory.file("clickhouse.err.log"), encoding: .utf8)) ?? "")
    }
}
