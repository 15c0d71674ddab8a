import EdgeIngestCore

/// `sink = "influxdb"`: line protocol over HTTP to `upload.url` (InfluxDB's
/// or VictoriaMetrics' `/write`), with the measurement, the tag fields and
/// the timestamp field.
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

    /// The tags and the timestamp must name fields the record types declare.
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
        if configuration.upload?.http.url.contains("precision=") == true {
            decoder.problem(
                upload["url"],
                "upload.url",
                "must not set precision=: the influxdb sink sends nanoseconds and adds precision=ns itself"
            )
        }
    }

    func summary(_ configuration: AgentConfiguration, upload: UploadSettings) -> String {
        "line protocol \(upload.http.displayURL), measurement \(measurement ?? "<record type>"), tags [\(tags.joined(separator: ", "))], time from \(timestamp ?? "the first timestamp field, else _id"), \(upload.maxRecords) records per batch"
    }

    func makeSink(_ configuration: AgentConfiguration, upload: UploadSettings, userAgent: String) -> SinkFactory {
        let http = upload.http
        let (types, measurement, tags, timestamp) = (configuration.types, measurement, tags, timestamp)
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
