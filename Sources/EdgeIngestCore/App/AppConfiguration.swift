/// Where an ``App``'s backend is and where it caches users.
///
/// ```swift
/// var configuration = AppConfiguration(baseURL: "https://ingest.example.com",
///                                      metadataDirectory: "/var/lib/myapp/edgeingest")
/// configuration.http.caFile = "/etc/myapp/ca.pem"
/// let app = App(id: "weather-fleet", configuration: configuration)
/// ```
public struct AppConfiguration: Sendable {
    /// The backend's base URL, without a trailing slash: login is
    /// `<baseURL>/auth/v1/apps/<id>/login`, batches go to
    /// `<baseURL>/ingest/v1/apps/<id>/batches` (docs/PROTOCOL.md).
    public var baseURL: String
    /// Where users' credentials are cached (`users.json`, mode 0600) and
    /// where ``User/configuration(clientResetMode:)`` puts each user's
    /// queue. Created with mode 0700.
    public var metadataDirectory: String
    /// TLS, proxy, timeouts and extra headers for every request to the
    /// backend. Its `url` is ignored (set from ``baseURL``).
    public var http: HTTPSettings
    /// Access tokens are refreshed this long before they expire. The default is 30 s.
    public var refreshMarginMilliseconds: Int64 = 30_000

    /// Creates a configuration; `baseURL` loses a trailing slash.
    public init(baseURL: String, metadataDirectory: String) {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        self.baseURL = base
        self.metadataDirectory = metadataDirectory
        var http = HTTPSettings(url: base)
        http.connectTimeoutMilliseconds = 5_000
        http.timeoutMilliseconds = 15_000
        self.http = http
    }
}
