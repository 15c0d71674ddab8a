/// Where the `postgresql` sink connects and writes.
///
/// ```swift
/// var settings = PostgresSettings(url: "postgresql://ingest@127.0.0.1:5432/telemetry")
/// settings.password = try String(contentsOfFile: "/etc/ingestd/pg-password")
/// settings.table = "weather"
/// ```
///
/// The password is never printed: ``description`` shows the URL through
/// ``redactedURL(_:)``.
public struct PostgresSettings: Sendable, Equatable, CustomStringConvertible {
    /// A libpq connection URI (`postgresql://user@host:5432/db?sslmode=verify-full`)
    /// or key/value string (`host=… dbname=…`); every libpq parameter works,
    /// TLS ones (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`) included.
    public var url: String
    /// Overrides a password in `url` (the configuration reads it from
    /// `password_file`). Without either, libpq's own sources apply
    /// (`PGPASSWORD`, `~/.pgpass`, `passfile=`).
    public var password: String?
    /// The schema of the tables; the default is the connection's
    /// `search_path` (normally `public`).
    public var schema: String?
    /// One table for every record type; the default is a table per record
    /// type, named after it.
    public var table: String?
    /// Connecting, at least 2 s (libpq counts whole seconds). The default is 5 s.
    public var connectTimeoutMilliseconds = 5_000
    /// One insert, from sending to the server's answer. The default is 30 s.
    public var timeoutMilliseconds = 30_000

    public init(url: String) { self.url = url }

    public var description: String { "PostgreSQL \(redactedURL(url))" }
}
