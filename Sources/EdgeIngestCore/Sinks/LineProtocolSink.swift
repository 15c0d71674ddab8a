/// InfluxDB (1.x `/write`, 2.x `/api/v2/write`) and VictoriaMetrics
/// (`/write`): each batch is one POST of line protocol
/// (``LineProtocolEncoder``), `precision=ns`, gzip when `upload.gzip`.
///
/// ```toml
/// [upload]
/// sink = "influxdb"
/// url = "http://127.0.0.1:8086/write?db=telemetry"     # VictoriaMetrics: http://127.0.0.1:8428/write
/// measurement = "weather"       # default: the record type's name
/// tags = ["deviceId"]           # the rest are fields
/// timestamp = "takenAt"         # default: the type's first timestamp field
/// ```
///
/// These engines keep one point per series (measurement + tags) and time,
/// not per `_id`: a re-sent point overwrites itself in InfluxDB;
/// VictoriaMetrics keeps every copy unless it runs with
/// `-dedup.minScrapeInterval`. So each point's time is its record's own
/// timestamp field, never made up: a record type without one holds the
/// queue (the agent's configuration refuses it before that), a record
/// without a value in it is refused alone.
/// Answers (recorded from InfluxDB 1.6 and VictoriaMetrics 1.79 in
/// Tests/Support/recorded): InfluxDB's `400 partial write` stored the valid
/// points — the batch is bisected (re-writing a stored point is harmless)
/// down to the refused ones, which go to the dead-letter table instead of
/// being re-sent forever; VictoriaMetrics answers 204 even for lines it
/// drops, so only what it says can be trusted.
package final class LineProtocolSink: BatchSink {
    let transport: CurlTransport
    /// One per record type, made once: each keeps its parser's buffers.
    private var encoders: [String: LineProtocolEncoder]
    /// `upload.url` with `precision=ns`.
    let url: String
    /// The record types that declare no timestamp field: their points would
    /// have no time of their own.
    let untimed: Set<String>

    package init(
        settings: HTTPSettings,
        types: [RecordType],
        measurement: String?,
        tags: [String],
        timestamp: String?,
        userAgent: String
    ) throws {
        transport = try CurlTransport(settings: settings, userAgent: userAgent)
        encoders = Dictionary(
            types.map {
                ($0.name, LineProtocolEncoder(type: $0, measurement: measurement, tags: tags, timestamp: timestamp))
            },
            uniquingKeysWith: { first, _ in first }
        )
        url = settings.url + (settings.url.contains("?") ? "&" : "?") + "precision=ns"
        untimed = Set(types.filter { LineProtocolEncoder.timeField(of: $0, preferring: timestamp) == nil }.map(\.name))
    }

    package var description: String { "line protocol \(transport.settings.displayURL)" }

    package func deliver(_ batch: SinkBatch) -> UploadOutcome {
        if untimed.contains(batch.type) {
            return .hold(
                reason:
                    "record type '\(batch.type)' declares no timestamp field, so its points would have no time of their own and distinct readings would collapse: declare one under [types.\(batch.type)]"
            )
        }
        guard let (body, refused) = encode(batch) else {
            return .hold(
                reason: "the influxdb sink has no declaration of record type '\(batch.type)': declare it under [types]"
            )
        }
        // Nothing left to send: every record was refused here.
        if refused.count == batch.recordCount { return .stored(rejected: refused) }
        var points = batch
        points.payload = body[...]
        let outcome = transport.deliver(
            points,
            headers: [("Content-Type", "text/plain; charset=utf-8")],
            url: url,
            classify: Self.classify
        )
        if case .stored = outcome { return .stored(rejected: refused) }
        return outcome
    }

    /// The batch as line protocol, and the records that cannot be points;
    /// nil for an undeclared type.
    func encode(_ batch: SinkBatch) -> (body: [UInt8], refused: [RecordRejection])? {
        // Taken out while in use, so its buffers are not copied on write.
        guard var encoder = encoders.removeValue(forKey: batch.type) else { return nil }
        defer { encoders[batch.type] = encoder }
        var body: [UInt8] = []
        body.reserveCapacity(batch.payload.count)
        var refused: [RecordRejection] = []
        batch.forEachRecord { index, line in
            do throws(LineProtocolEncoder.Refusal) {
                try encoder.encode(line, into: &body)
            } catch {
                refused.append(RecordRejection(index: index, reason: error.reason))
            }
        }
        return (body, refused)
    }

    /// What an InfluxDB or VictoriaMetrics answer means. Pure, for table
    /// tests against the recorded answers.
    static func classify(status: Int, retryAfter: String?, body: [UInt8], batchSize: Int) -> UploadOutcome {
        if (200..<300).contains(status) { return .stored(rejected: []) }
        let text = String(decoding: body.prefix(2048), as: UTF8.self)
        // Matched at the start of the engine's message only: messages about
        // data quote the refused line, which may hold any of these words.
        let message = Self.errorMessage(text)
        if ["database is required", "retention policy not found", "database not found"].contains(
            where: message.hasPrefix
        ) {
            return .hold(reason: "InfluxDB HTTP \(status): \(Self.named(text)): fix upload.url (db=, rp=)")
        }
        if message.hasPrefix("gzip:") || message.contains("cannot read gzipped") {
            // Our body did not match its Content-Encoding: our fault, not the data's.
            return .retry(reason: "HTTP \(status): \(Self.named(text))", retryAfterSeconds: nil)
        }
        if status == 400 {
            // A partial write stored the valid points; bisecting finds the
            // refused ones (re-writing a stored point changes nothing).
            return .badBatch(reason: "InfluxDB HTTP 400: \(Self.named(text))")
        }
        if status == 401 {
            // No login to refresh here ([auth] is for the ingest protocol): hold until fixed.
            return .hold(
                reason:
                    "InfluxDB HTTP 401: the credentials were refused: fix u=/p= in upload.url or the Authorization header in upload.headers"
            )
        }
        return ResponseClassifier.classify(status: status, retryAfter: retryAfter, body: body, batchSize: batchSize)
    }

    /// InfluxDB's `{"error":"…"}` message, else the text as it is (VictoriaMetrics answers plain text).
    static func errorMessage(_ text: String) -> Substring {
        let prefix = #"{"error":""#
        return text.hasPrefix(prefix) ? text.dropFirst(prefix.count) : Substring(text)
    }

    /// The kind of error, without the quoted line (which holds data).
    static func named(_ text: String) -> String {
        let message = errorMessage(text)
        for (needle, name) in [
            ("field type conflict", "field type conflict"),
            ("beyond retention policy", "points beyond the retention policy"),
            ("unable to parse", "unparsable line"),
        ] where message.contains(needle) {
            return (message.hasPrefix("partial write") ? "partial write, " : "") + name
        }
        for (prefix, name) in [
            ("database is required", "no database (db=) in the URL"),
            ("retention policy not found", "no such retention policy"),
            ("database not found", "no such database"), ("gzip:", "body not gzip"),
        ] where message.hasPrefix(prefix) {
            return name
        }
        if message.contains("cannot read gzipped") { return "body not gzip" }
        return "refused"
    }
}
