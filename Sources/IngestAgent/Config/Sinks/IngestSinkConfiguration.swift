import EdgeIngestCore

/// `sink = "ingest"` (the default): the ingest protocol over HTTP to
/// `upload.url`, an EdgeIngest backend or another ingestd (docs/PROTOCOL.md).
struct IngestSinkConfiguration: SinkConfiguration {
    static let name = "ingest"
    /// Several equivalent upstreams (gateways before one engine), in turn.
    static let ownKeys: Set<String> = ["urls", "failover_after", "failback_s"]

    static func decode(
        _ upload: TOMLTable,
        _ decoder: inout ConfigurationDecoder,
        environment: [String: String]
    ) -> Self? {
        Self()
    }

    func summary(_ configuration: AgentConfiguration, upload: UploadSettings) -> String {
        ([upload.http.url] + upload.http.failoverURLs).map(redactedURL).joined(separator: ", then ")
            + ", \(upload.maxRecords) records per batch, gzip \(upload.http.gzip), token \(upload.http.bearerToken == nil ? "none" : "set")"
    }

    func makeSink(_ configuration: AgentConfiguration, upload: UploadSettings, userAgent: String) -> SinkFactory {
        let http = upload.http
        return { try IngestProtocolSink(settings: http, userAgent: userAgent) }
    }
}
