import EdgeIngestCore

/// Where `[upload]` delivers confirmed records (`upload.sink`): one of
/// ``kinds``, with its own settings.
///
/// ```toml
/// [upload]
/// sink = "sqlite"                            # the embedded default backend
/// path = "/var/lib/ingestd/archive.sqlite"
/// ```
package struct SinkSettings: Sendable {
    /// The sink's own settings; its type says which sink it is.
    let configuration: any SinkConfiguration

    init(_ configuration: any SinkConfiguration) { self.configuration = configuration }

    /// The ingest protocol over HTTP to `upload.url` (the default).
    package static let ingestProtocol = SinkSettings(IngestSinkConfiguration())

    /// Its name in `upload.sink`: `ingest`, `sqlite`, `clickhouse`, `postgresql`, `influxdb`, `mqtt` or `jetstream`.
    package var name: String { type(of: configuration).name }

    /// Every sink, in the order errors list them.
    static let kinds: [any SinkConfiguration.Type] = [
        IngestSinkConfiguration.self, SQLiteSinkConfiguration.self, ClickHouseSinkConfiguration.self,
        PostgreSQLSinkConfiguration.self, InfluxDBSinkConfiguration.self, MQTTSinkConfiguration.self,
        JetStreamSinkConfiguration.self,
    ]

    /// The names `upload.sink` accepts.
    static var names: [String] { kinds.map { $0.name } }

    /// Keys of `[upload]` that only some sinks read, and which (in ``kinds`` order).
    static var sinkOnlyKeys: [String: [String]] {
        var owners: [String: [String]] = [:]
        for kind in kinds {
            for key in kind.ownKeys { owners[key, default: []].append(kind.name) }
        }
        return owners
    }

    /// Keys of `[upload]` that an HTTP sink reads.
    static let httpKeys: Set<String> = [
        "url", "gzip", "connect_timeout_ms", "timeout_ms", "ca_file", "ca_path", "client_certificate", "client_key",
        "proxy",
        "headers", "token_file",
    ]

    /// Every key some sink reads beyond the batching keys.
    static var keys: Set<String> {
        kinds.reduce(httpKeys) { $0.union($1.ownKeys).union($1.httpKeysRead) }
    }
}

extension AgentConfiguration {
    /// The SQLite archive sink's file: `upload.path`, relative to the state
    /// directory unless absolute. Nil for other sinks.
    package var resolvedArchivePath: String? {
        (sink.configuration as? SQLiteSinkConfiguration).map { $0.resolvedPath(stateDirectory: stateDirectory) }
    }

    /// Builds the configured sink for `upload`, on the upload thread.
    func sinkFactory(for upload: UploadSettings, userAgent: String) -> SinkFactory {
        sink.configuration.makeSink(self, upload: upload, userAgent: userAgent)
    }

    /// `check-config`'s line about the upload, after "upload: ".
    package var uploadSummary: String {
        let sinks = deliveringSinks
        guard !sinks.isEmpty else { return "none (readings stay queued)" }
        guard sinks.count > 1 || sinks[0].route.types != nil else {
            return sink.configuration.summary(self, upload: sinks[0].upload)
        }
        // One line per sink, under "upload: ".
        return "\(sinks.count) sinks, each at its own cursor"
            + sinks.map { sink in
                "\n  \(sink.name): \(sink.sink.configuration.summary(self, upload: sink.upload))"
                    + (sink.route.types.map { "; types \($0.sorted().joined(separator: ", "))" } ?? "")
            }.joined()
    }
}
