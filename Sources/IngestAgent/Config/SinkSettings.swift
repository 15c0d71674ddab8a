import EdgeIngestCore

/// Where `[upload]` delivers confirmed records (`upload.sink`).
///
/// ```toml
/// [upload]
/// sink = "sqlite"                            # the embedded default backend
/// path = "/var/lib/ingestd/archive.sqlite"
/// ```
public enum SinkSettings: Sendable, Equatable {
    /// `sink = "ingest"` (the default): the ingest protocol over HTTP to
    /// `upload.url` — an EdgeIngest backend or another ingestd.
    case ingestProtocol
    /// `sink = "sqlite"`: a table per record type in the SQLite file at
    /// `path` (relative: in the state directory; see
    /// ``AgentConfiguration/resolvedArchivePath``).
    case sqliteArchive(path: String)
    /// `sink = "clickhouse"`: `INSERT … FORMAT JSONEachRow` over HTTP to
    /// `upload.url`, into `database.table` (default: the record type's name).
    /// `deduplicationToken` false leaves `insert_deduplication_token` out,
    /// for servers older than 22.x.
    case clickHouse(database: String?, table: String?, deduplicationToken: Bool = true)
    /// `sink = "postgresql"`: `INSERT … ON CONFLICT (_id) DO NOTHING` through
    /// libpq to the database at `upload.url`.
    case postgreSQL(PostgresSettings)
    /// `sink = "influxdb"`: line protocol over HTTP to `upload.url`
    /// (InfluxDB's or VictoriaMetrics' `/write`).
    case lineProtocol(measurement: String?, tags: [String], timestamp: String?)

    /// The names `upload.sink` accepts.
    static let names = ["ingest", "sqlite", "clickhouse", "postgresql", "influxdb"]
    /// Keys of `[upload]` that only some sinks read, and which.
    static let sinkOnlyKeys: [String: [String]] = [
        "path": ["sqlite"], "database": ["clickhouse"], "table": ["clickhouse", "postgresql"], "schema": ["postgresql"],
        "password_file": ["postgresql"], "deduplication_token": ["clickhouse"], "measurement": ["influxdb"], "tags": ["influxdb"],
        "timestamp": ["influxdb"],
    ]
    /// HTTP keys the postgresql sink reads too.
    static let postgresKeys: Set<String> = ["url", "connect_timeout_ms", "timeout_ms"]

    /// Keys of `[upload]` that only an HTTP sink reads.
    static let httpKeys: Set<String> = [
        "url", "gzip", "connect_timeout_ms", "timeout_ms", "ca_file", "ca_path", "client_certificate", "client_key", "proxy",
        "headers", "token_file",
    ]
}

extension AgentConfiguration {
    /// The SQLite archive sink's file: `upload.path`, relative to the state
    /// directory unless absolute. Nil for other sinks.
    public var resolvedArchivePath: String? {
        guard case .sqliteArchive(let path) = sink else { return nil }
        return path.hasPrefix("/") ? path : stateDirectory + "/" + path
    }

    /// Builds the configured sink for `upload`, on the upload thread.
    func sinkFactory(for upload: UploadSettings, userAgent: String) -> SinkFactory {
        switch sink {
        case .ingestProtocol:
            let http = upload.http
            return { try IngestProtocolSink(settings: http, userAgent: userAgent) }
        case .sqliteArchive:
            let path = resolvedArchivePath ?? ""
            let types = self.types
            return { SQLiteArchiveSink(path: path, types: types) }
        case .clickHouse(let database, let table, let token):
            let http = upload.http
            return { try ClickHouseSink(settings: http, database: database, table: table, deduplicationToken: token, userAgent: userAgent) }
        case .lineProtocol(let measurement, let tags, let timestamp):
            let http = upload.http
            let types = self.types
            return { try LineProtocolSink(settings: http, types: types, measurement: measurement, tags: tags, timestamp: timestamp, userAgent: userAgent) }
        case .postgreSQL(let settings):
            let types = self.types
            return { PostgresSink(settings: settings, types: types) }
        }
    }
}
