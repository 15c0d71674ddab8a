/// `[metrics]`: an HTTP listener for Prometheus (`/metrics`) and for
/// health checks (`/health`, `/ready`). Off without the section.
///
/// ```toml
/// [metrics]
/// listen = "127.0.0.1:9464"     # the default: loopback only
/// ready_max_age_s = 3600
/// ```
public struct MetricsSettings: Sendable, Hashable {
    /// "host:port". The default is loopback, port 9464 (OpenTelemetry's
    /// Prometheus exporter's): scraping from elsewhere is a choice.
    public var listen = "127.0.0.1:9464"
    /// `/ready` answers 503 once the oldest queued reading is older than
    /// this (the backlog is not being delivered). The default is 1 hour.
    public var readyMaxAgeSeconds: Int64 = 3600

    public init() {}
}
