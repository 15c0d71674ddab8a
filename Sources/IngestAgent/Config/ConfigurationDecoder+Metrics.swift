import EdgeIngestCore
import IngestGateway

/// `[metrics]`: whether and where `/metrics`, `/health` and `/ready` are
/// served (``MetricsSettings`` holds the defaults).
extension ConfigurationDecoder {
    static let metricsKeys: Set<String> = ["enabled", "listen", "ready_max_age_s"]

    /// nil without the section or with `enabled = false`.
    mutating func decodeMetrics(_ t: TOMLTable?) -> MetricsSettings? {
        guard let t else { return nil }
        rejectUnknown(t, known: Self.metricsKeys, prefix: "metrics.")
        var settings = MetricsSettings()
        if let v = t["listen"], let listen = string(v, "metrics.listen") {
            if (try? HTTPServer.split(listen)) == nil {
                problem(v, "metrics.listen", "must be \"host:port\", e.g. \"127.0.0.1:9464\" or \"[::1]:9464\"")
            }
            settings.listen = listen
        }
        if let v = t["ready_max_age_s"], let n = integer(v, "metrics.ready_max_age_s", min: 1) {
            settings.readyMaxAgeSeconds = n
        }
        if let v = t["enabled"], bool(v, "metrics.enabled") == false { return nil }
        return settings
    }
}
