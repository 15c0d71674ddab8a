/// `[metrics]`: an HTTP listener for Prometheus (`/metrics`) and for
/// health checks (`/health`, `/ready`). Off without the section.
///
/// ```toml
/// [metrics]
/// listen = "127.0.0.1:9464"     # the default: loopback only
/// ```
package struct MetricsSettings: Sendable, Hashable {
    /// "host:port". The default is loopback, port 9464 (OpenTelemetry's
    /// Prometheus exporter's): scraping from elsewhere is a choice.
    package var listen = "127.0.0.1:9464"
    /// The older name of `upload.unhealthy_after_s`
    /// (``AgentConfiguration/unhealthyAfterSeconds``), used when that is not set.
    package var readyMaxAgeSeconds: Int64?

    package init() {}
}
