/// Where the `postgresql` sink connects and writes.
///
/// ```swift
/// var settings = PostgresSettings(url: "postgresql://ingest@127.0.0.1:5432/telemetry")
/// settings.password = try String(contentsOfFile: "/etc/ingestd/pg-password")
/// settings.table = "weather"
/// ```
///
/// The password is never printed: ``description`` shows the URL with any
/// password in it replaced by `***`.
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

    public var description: String { "PostgreSQL \(Self.redacted(url))" }

    /// `url` with any password replaced by `***`: the `user:password@` of a
    /// URI, a `password=` parameter of a URI's query or of a key/value string.
    public static func redacted(_ url: String) -> String {
        var text = url
        if let scheme = text.firstRange(of: "://") {
            let authorityEnd = text[scheme.upperBound...].firstIndex(where: { $0 == "/" || $0 == "?" }) ?? text.endIndex
            if let at = text[scheme.upperBound..<authorityEnd].lastIndex(of: "@"),
                let colon = text[scheme.upperBound..<at].firstIndex(of: ":")
            {
                text.replaceSubrange(text.index(after: colon)..<at, with: "***")
            }
        }
        var out = ""
        var rest = Substring(text)
        while let range = rest.firstRange(of: "password=") {
            let before = range.lowerBound == rest.startIndex ? nil : rest[rest.index(before: range.lowerBound)]
            out += rest[..<range.upperBound]
            rest = rest[range.upperBound...]
            guard before == nil || before == "?" || before == "&" || before == " " else { continue }
            var end = rest.startIndex
            if rest.first == "'" {
                // 'quoted value' with \' escapes
                end = rest.index(after: end)
                while end < rest.endIndex, rest[end] != "'" {
                    if rest[end] == "\\" { end = rest.index(end, offsetBy: 2, limitedBy: rest.endIndex) ?? rest.endIndex } else { end = rest.index(after: end) }
                }
                end = end < rest.endIndex ? rest.index(after: end) : end
            } else {
                end = rest.firstIndex(where: { $0 == "&" || $0 == " " }) ?? rest.endIndex
            }
            out += "***"
            rest = rest[end...]
        }
        return out + rest
    }
}
