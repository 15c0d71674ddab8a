import EdgeIngestCore

/// `sink = "influxdb"`: line protocol over HTTP to `upload.url` (InfluxDB's
/// or VictoriaMetrics' `/write`), with the measurement, the tag fields and
/// the timestamp field.
///
/// Every record type needs a timestamp field: these engines keep one point
/// per series and time, so a point's time must be its reading's own. Times
/// made from the `_id` (exact to the second) gave distinct readings one
/// time — VictoriaMetrics keeps milliseconds, so more than 1,000 readings of
/// a series in a second collapsed, and ids of different agents can collide
/// at any precision — and status still counted them uploaded.
struct InfluxDBSinkConfiguration: SinkConfiguration {
    static let name = "influxdb"
    static let ownKeys: Set<String> = ["measurement", "tags", "timestamp"]

    var measurement: String?
    var tags: [String] = []
    var timestamp: String?

    static func decode(
        _ upload: TOMLTable,
        _ decoder: inout ConfigurationDecoder,
        environment: [String: String]
    ) -> Self? {
        let measurement = upload["measurement"].flatMap { decoder.string($0, "upload.measurement") }
        if let measurement,
            measurement.isEmpty || measurement.hasPrefix("_") || measurement.contains(where: \.isNewline)
        {
            decoder.problem(
                upload["measurement"],
                "upload.measurement",
                "must be a name not starting with _ and without newlines, got \"\(measurement.prefix(40))\""
            )
        }
        let tags = upload["tags"].map { decoder.strings($0, "upload.tags") } ?? []
        let timestamp = upload["timestamp"].flatMap { decoder.string($0, "upload.timestamp") }
        return Self(measurement: measurement, tags: tags, timestamp: timestamp)
    }

    /// The tags and the timestamp must name fields the record types declare,
    /// and every record type must have a timestamp field for the points' times.
    func check(_ configuration: AgentConfiguration, upload: TOMLTable, _ decoder: inout ConfigurationDecoder) {
        let types = configuration.types
        for tag in tags where !types.contains(where: { $0.fields.contains { $0.name == tag } }) {
            decoder.problem(
                upload["tags"],
                "upload.tags",
                "names '\(tag.prefix(40))', which no record type under [types] declares"
            )
        }
        if let timestamp,
            !types.contains(where: { $0.fields.contains { $0.name == timestamp && $0.type == .timestamp } })
        {
            decoder.problem(
                upload["timestamp"],
                "upload.timestamp",
                "must name a field of type timestamp under [types], got '\(timestamp.prefix(40))'"
            )
        }
        for type in types where LineProtocolEncoder.timeField(of: type, preferring: timestamp) == nil {
            // Accepted before 0.2.0: held, not refused (the sink holds too).
            decoder.holdUpload(
                upload["timestamp"] ?? upload["sink"],
                "upload.timestamp",
                "record type '\(type.name)' declares no timestamp field, so its points would have no time of their own: InfluxDB and VictoriaMetrics keep one point per series and time, and a time made from the _id (exact to the second) makes distinct readings collapse into one; declare when each reading was taken, e.g. takenAt = \"timestamp\" under [types.\(type.name)]"
            )
        }
        if configuration.upload?.http.url.contains("precision=") == true {
            decoder.problem(
                upload["url"],
                "upload.url",
                "must not set precision=: the influxdb sink sends nanoseconds and adds precision=ns itself"
            )
        }
    }

    func summary(_ configuration: AgentConfiguration, upload: UploadSettings) -> String {
        "line protocol \(upload.http.displayURL), measurement \(measurement ?? "<record type>"), tags [\(tags.joined(separator: ", "))], time from \(timestamp ?? "the first timestamp field"), \(upload.maxRecords) records per batch"
    }

    func makeSink(_ configuration: AgentConfiguration, upload: UploadSettings, userAgent: String) -> SinkFactory {
        let http = upload.http
        let (types, measurement, tags, timestamp) = (configuration.deliveredTypes, measurement, tags, timestamp)
        return {
            try LineProtocolSink(
                settings: http,
                types: types,
                measurement: measurement,
                tags: tags,
                timestamp: timestamp,
                userAgent: userAgent
            )
        }
    }
}
