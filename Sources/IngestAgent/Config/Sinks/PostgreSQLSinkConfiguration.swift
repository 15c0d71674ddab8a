import EdgeIngestCore

/// `sink = "postgresql"`: `INSERT … ON CONFLICT (_id) DO NOTHING` through
/// libpq to the database at `upload.url`, with the password from a file or
/// the `postgres-password` credential.
struct PostgreSQLSinkConfiguration: SinkConfiguration {
    static let name = "postgresql"
    static let ownKeys: Set<String> = ["table", "schema", "password_file"]
    static let isOverHTTP = false
    static let httpKeysRead: Set<String> = ["url", "connect_timeout_ms", "timeout_ms"]
    static let withoutHTTP = "connects with libpq (TLS: sslmode, sslrootcert, sslcert, sslkey in upload.url)"

    let settings: PostgresSettings

    static func decode(
        _ upload: TOMLTable,
        _ decoder: inout ConfigurationDecoder,
        environment: [String: String]
    ) -> Self? {
        let example = "a libpq URL, e.g. \"postgresql://ingest@127.0.0.1:5432/telemetry\""
        guard let url = decoder.requiredString(upload, "url", sink: name, what: example) else { return nil }
        guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") || url.contains("=") else {
            decoder.problem(
                upload["url"],
                "upload.url",
                "must be a libpq URL (postgresql://user@host:port/database) or key=value string, got \"\(redactedURL(url).prefix(40))\""
            )
            return nil
        }
        var settings = PostgresSettings(url: url)
        settings.schema = decoder.identifier(upload["schema"], "upload.schema")
        settings.table = decoder.identifier(upload["table"], "upload.table")
        if let v = upload["connect_timeout_ms"], let n = decoder.integer(v, "upload.connect_timeout_ms", min: 1) {
            settings.connectTimeoutMilliseconds = Int(n)
        }
        if let v = upload["timeout_ms"], let n = decoder.integer(v, "upload.timeout_ms", min: 1) {
            settings.timeoutMilliseconds = Int(n)
        }
        settings.password = decoder.secret(
            upload["password_file"],
            "upload.password_file",
            credential: "postgres-password",
            environment: environment,
            required: false
        )
        return Self(settings: settings)
    }

    func summary(_ configuration: AgentConfiguration, upload: UploadSettings) -> String {
        let target = (settings.schema.map { $0 + "." } ?? "") + (settings.table ?? "<record type>")
        let password =
            settings.password != nil
            ? "set" : redactedURL(settings.url) != settings.url ? "in url" : "from libpq's defaults"
        return "\(settings) into \(target), \(upload.maxRecords) records per batch, password \(password)"
    }

    func makeSink(_ configuration: AgentConfiguration, upload: UploadSettings, userAgent: String) -> SinkFactory {
        let (settings, types) = (settings, configuration.deliveredTypes)
        // A gateway's owner field keys the tables with _id (tenants may share _ids).
        let ownerField = configuration.inputs.lazy.compactMap(\.http?.ownerField).first
        return { PostgresSink(settings: settings, types: types, ownerField: ownerField) }
    }
}
