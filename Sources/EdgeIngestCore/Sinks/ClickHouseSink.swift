/// ClickHouse over its HTTP interface: each batch is one
/// `INSERT INTO db.table FORMAT JSONEachRow` whose body is the queued NDJSON
/// as is (gzip when `upload.gzip`), one table per record type.
///
/// Once per `_id` needs the table's help: a `ReplacingMergeTree` ordered by
/// `_id` removes a record that came again (a retried batch, a batch re-cut
/// differently after a restart) when it merges parts — query with `FINAL`
/// to see it deduplicated before that. On the 18.16 that Debian 12 ships
/// that is all: a plain MergeTree deduplicates no insert there
/// (docs/SINKS.md, "What deduplication you get"). Newer servers can also
/// drop a repeated insert when it arrives: from 22.2 retries carry the
/// same `insert_deduplication_token` (the batch's idempotency key; 18.16
/// refuses the setting, so set `deduplication_token = false` there), which
/// a table with the 21.x setting `non_replicated_deduplication_window` (or
/// a Replicated one) uses.
///
/// ```toml
/// [upload]
/// sink = "clickhouse"
/// url = "http://127.0.0.1:8123/"
/// database = "telemetry"          # default: the server's default database
/// table = "weather"               # default: the record type's name
/// headers = { "X-ClickHouse-User" = "ingest" }
/// ```
///
/// Errors: ClickHouse puts `Code: N` at the start of an error body. Codes
/// that mean the configuration is wrong (unknown table, database or column,
/// authentication, read-only) hold the queue; the rest go through
/// ``ResponseClassifier`` (bad data → bisect and dead-letter, others retried).
package final class ClickHouseSink: BatchSink {
    let transport: CurlTransport
    let database: String?
    let table: String?
    /// Whether inserts carry `insert_deduplication_token` (ClickHouse 22.2
    /// and later; older servers, 18.16 included, refuse the setting with
    /// code 115).
    let deduplicationToken: Bool

    package init(
        settings: HTTPSettings,
        database: String?,
        table: String?,
        deduplicationToken: Bool = true,
        userAgent: String
    ) throws {
        transport = try CurlTransport(settings: settings, userAgent: userAgent)
        self.database = database
        self.table = table
        self.deduplicationToken = deduplicationToken
    }

    package var description: String { "ClickHouse \(transport.settings.displayURL)" }

    /// The insert for records of `type`.
    package func query(type: String) -> String {
        let target = (database.map { Self.quoted($0) + "." } ?? "") + Self.quoted(table ?? type)
        return "INSERT INTO \(target) FORMAT JSONEachRow"
    }

    package func url(for batch: SinkBatch) -> String {
        let base = transport.settings.url
        let insert = base + (base.contains("?") ? "&" : "?") + "query=" + percentEncoded(query(type: batch.type))
        return deduplicationToken
            ? insert + "&insert_deduplication_token=" + percentEncoded(batch.idempotencyKey) : insert
    }

    package func deliver(_ batch: SinkBatch) -> UploadOutcome {
        transport.deliver(
            batch,
            headers: [("Content-Type", "application/x-ndjson")],
            url: url(for: batch),
            classify: Self.classify
        )
    }

    /// What a ClickHouse answer means. Pure, for table tests.
    package static func classify(status: Int, retryAfter: String?, body: [UInt8], batchSize: Int) -> UploadOutcome {
        // A 2xx from ClickHouse has no per-record rejections to read.
        if (200..<300).contains(status) { return .stored(rejected: []) }
        if let code = ResponseClassifier.clickHouseCode(body) {
            if let meaning = ResponseClassifier.clickHouseConfiguration[code] {
                // Settings come from the deduplication token and from upload.url's query.
                let fix =
                    code == 115
                    ? "remove the setting from upload.url if it has one, or set upload.deduplication_token = false"
                    : "fix the table or the credentials in [upload]"
                return .hold(reason: "ClickHouse code \(code) (\(meaning)): \(fix)")
            }
            // Newer servers answer data errors with 400, older ones with 500.
            if status == 400 || ResponseClassifier.clickHouseBadData.contains(code) {
                return .badBatch(reason: "ClickHouse code \(code)")
            }
        }
        return ResponseClassifier.classify(status: status, retryAfter: retryAfter, body: body, batchSize: batchSize)
    }

    /// A ClickHouse identifier in backquotes (names are checked to be plain
    /// words when the configuration is read; this is belt and braces).
    static func quoted(_ name: String) -> String {
        "`" + name.split(separator: "`", omittingEmptySubsequences: false).joined(separator: "``") + "`"
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
func percentEncoded(_ text: String) -> String {
    let hex = Array("0123456789ABCDEF".utf8)
    var out: [UInt8] = []
    for b in text.utf8 {
        switch b {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            out.append(b)
        default:
            out += [UInt8(ascii: "%"), hex[Int(b >> 4)], hex[Int(b & 15)]]
        }
    }
    return String(decoding: out, as: UTF8.self)
}
