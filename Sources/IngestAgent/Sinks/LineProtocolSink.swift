import EdgeIngest

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
/// timestamp = "takenAt"         # default: the type's first timestamp field, else the _id's time
/// ```
///
/// These engines deduplicate by series (measurement + tags) and time, not
/// by `_id`: a re-sent point overwrites itself in InfluxDB; VictoriaMetrics
/// keeps every copy unless it runs with `-dedup.minScrapeInterval`.
/// Answers (recorded from InfluxDB 1.6 and VictoriaMetrics 1.79 in
/// Tests/Support/recorded): InfluxDB's `400 partial write` stored the valid
/// points — the batch is bisected (re-writing a stored point is harmless)
/// down to the refused ones, which go to the dead-letter table instead of
/// being re-sent forever; VictoriaMetrics answers 204 even for lines it
/// drops, so only what it says can be trusted.
final class LineProtocolSink: BatchSink {
    let transport: CurlTransport
    let types: [String: RecordType]
    let measurement: String?
    let tags: [String]
    let timestamp: String?
    private var encoders: [String: LineProtocolEncoder] = [:]
    let url: String

    init(settings: HTTPSettings, types: [RecordType], measurement: String?, tags: [String], timestamp: String?, userAgent: String) throws {
        transport = try CurlTransport(settings: settings, userAgent: userAgent)
        self.types = Dictionary(types.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        self.measurement = measurement
        self.tags = tags
        self.timestamp = timestamp
        url = settings.url + (settings.url.contains("?") ? "&" : "?") + "precision=ns"
    }

    var description: String { "line protocol \(transport.settings.url)" }

    func deliver(_ batch: SinkBatch) -> UploadOutcome {
        guard let type = types[batch.type] else {
            return .hold(reason: "the influxdb sink has no declaration of record type '\(batch.type)': declare it under [types]")
        }
        let (body, refused) = encode(batch, type: type)
        if refused.count == batch.recordCount { return .stored(rejected: refused) }
        var points = batch
        points.payload = body[...]
        let outcome = transport.deliver(points, headers: [("Content-Type", "text/plain; charset=utf-8")], url: url, classify: Self.classify)
        if case .stored = outcome { return .stored(rejected: refused) }
        return outcome
    }

    /// The batch as line protocol, and the records that cannot be points.
    func encode(_ batch: SinkBatch, type: RecordType) -> (body: [UInt8], refused: [RecordRejection]) {
        var encoder = encoders[type.name] ?? LineProtocolEncoder(type: type, measurement: measurement, tags: tags, timestamp: timestamp)
        defer { encoders[type.name] = encoder }
        var body: [UInt8] = []
        body.reserveCapacity(batch.payload.count)
        var refused: [RecordRejection] = []
        batch.payload.withUnsafeBytes { bytes in
            var start = 0
            var index = 0
            while start < bytes.count {
                let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
                do throws(LineProtocolEncoder.Refusal) {
                    try encoder.encode(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), into: &body)
                } catch {
                    refused.append(RecordRejection(index: index, reason: error.reason))
                }
                index += 1
                start = end + 1
            }
        }
        return (body, refused)
    }

    /// What an InfluxDB or VictoriaMetrics answer means. Pure, for table
    /// tests against the recorded answers.
    static func classify(status: Int, retryAfter: String?, body: [UInt8], batchSize: Int) -> UploadOutcome {
        if (200..<300).contains(status) { return .stored(rejected: []) }
        let text = String(decoding: body.prefix(2048), as: UTF8.self)
        if text.contains("database is required") || text.contains("retention policy not found") || text.contains("database not found") {
            return .hold(reason: "InfluxDB HTTP \(status): \(Self.named(text)): fix upload.url (db=, rp=)")
        }
        if status == 400 {
            // A partial write stored the valid points; bisecting finds the
            // refused ones (re-writing a stored point changes nothing).
            return .badBatch(reason: "InfluxDB HTTP 400: \(Self.named(text))")
        }
        return ResponseClassifier.classify(status: status, retryAfter: retryAfter, body: [], batchSize: batchSize)
    }

    /// The kind of error, without the quoted line (which holds data).
    static func named(_ text: String) -> String {
        for (needle, name) in [
            ("field type conflict", "field type conflict"), ("beyond retention policy", "points beyond the retention policy"),
            ("unable to parse", "unparsable line"), ("database is required", "no database (db=) in the URL"),
            ("retention policy not found", "no such retention policy"), ("database not found", "no such database"),
            ("gzip", "body not gzip"),
        ] where text.contains(needle) {
            return (text.contains("partial write") ? "partial write, " : "") + name
        }
        return "refused"
    }
}
