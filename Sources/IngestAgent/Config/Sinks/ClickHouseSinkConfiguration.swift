import EdgeIngestCore

/// `sink = "clickhouse"`: `INSERT … FORMAT JSONEachRow` over HTTP to
/// `upload.url`, into `database.table` (default: the record type's name).
/// `deduplication_token = false` leaves `insert_deduplication_token` out,
/// for servers older than 22.2 (Debian 12's 18.16 among them).
struct ClickHouseSinkConfiguration: SinkConfiguration {
    static let name = "clickhouse"
    static let ownKeys: Set<String> = ["database", "table", "deduplication_token"]

    var database: String?
    var table: String?
    var deduplicationToken = true

    static func decode(
        _ upload: TOMLTable,
        _ decoder: inout ConfigurationDecoder,
        environment: [String: String]
    ) -> Self? {
        let database = decoder.identifier(upload["database"], "upload.database")
        let table = decoder.identifier(upload["table"], "upload.table")
        let token = upload["deduplication_token"].flatMap { decoder.bool($0, "upload.deduplication_token") } ?? true
        return Self(database: database, table: table, deduplicationToken: token)
    }

    func summary(_ configuration: AgentConfiguration, upload: UploadSettings) -> String {
        let target = (database.map { $0 + "." } ?? "") + (table ?? "<record type>")
        return
            "ClickHouse \(upload.http.displayURL) into \(target), \(upload.maxRecords) records per batch, gzip \(upload.http.gzip), deduplication token \(deduplicationToken ? "sent" : "off")"
    }

    func makeSink(_ configuration: AgentConfiguration, upload: UploadSettings, userAgent: String) -> SinkFactory {
        let http = upload.http
        let (database, table, token) = (database, table, deduplicationToken)
        return {
            try ClickHouseSink(
                settings: http,
                database: database,
                table: table,
                deduplicationToken: token,
                userAgent: userAgent
            )
        }
    }
}
