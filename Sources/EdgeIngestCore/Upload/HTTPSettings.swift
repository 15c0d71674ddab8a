/// How the uploader reaches the backend. Secrets (the bearer token) are
/// never printed: ``description`` shows only whether one is set.
public struct HTTPSettings: Sendable, CustomStringConvertible {
    /// The ingest endpoint, e.g. `https://backend.example/ingest/v1/batches`.
    public var url: String
    /// The default is 5 s.
    public var connectTimeoutMilliseconds = 5_000
    /// The whole request, including the acknowledgement. The default is 30 s.
    public var timeoutMilliseconds = 30_000
    /// PEM bundle of CAs to trust instead of the system's. The default is none.
    public var caFile: String?
    /// Directory of hashed CA certificates. The default is none.
    public var caPath: String?
    /// PEM client certificate and key for mutual TLS. The default is none.
    public var clientCertificate: String?
    public var clientKey: String?
    /// `http://proxy:3128`; the default is libcurl's: `https_proxy`,
    /// `http_proxy` and `no_proxy` from the environment.
    public var proxy: String?
    /// Extra headers sent with every request.
    public var headers: [String: String] = [:]
    /// Compress bodies with gzip. The default is false.
    public var gzip = false
    /// Sent as `Authorization: Bearer …`. Never logged.
    public var bearerToken: String?

    /// Equivalent upstreams after ``url``, used in turn when it fails
    /// (``UpstreamFailover``; the ingest protocol only). The default is none.
    package var failoverURLs: [String] = []
    /// Passing failures in a row before the next upstream is used. The default is 3.
    package var failoverAfterFailures = 3
    /// How long a secondary upstream is used before the first is tried
    /// again. The default is 5 minutes.
    package var failbackMilliseconds: Int64 = 300_000

    public init(url: String) { self.url = url }

    /// ``url`` as logs, errors and `check-config` show it: any password in
    /// it replaced by `***` (``redactedURL(_:)``).
    public var displayURL: String { redactedURL(url) }

    public var description: String {
        "HTTPSettings(url: \(displayURL), gzip: \(gzip), token: \(bearerToken == nil ? "none" : "set"), caFile: \(caFile ?? "system"))"
    }
}
