import Logging

/// The defaults the agent's `[upload]` and the library's ``UploadOptions``
/// share: one place for each.
package enum UploadDefaults {
    package static let maxRecords = 4000
    package static let maxBytes = 1 << 20
    package static let lingerMilliseconds = 200
}

/// The `[upload]` section: where and how readings stream to the backend.
public struct UploadSettings: Sendable {
    public var http: HTTPSettings
    /// Records per request. The default is 4000 (docs/BENCHMARKS.md,
    /// "Side by side with Fluent Bit": a quarter of the acknowledgements'
    /// writes per reading).
    public var maxRecords = UploadDefaults.maxRecords
    /// Uncompressed bytes per request (about). The default is 1 MiB.
    public var maxBytes = UploadDefaults.maxBytes
    /// How long a partial batch may wait for more readings. The default is 200 ms.
    public var lingerMilliseconds = UploadDefaults.lingerMilliseconds
    public var backoff = Backoff()
    /// Transient failures of one batch before its records are moved to the
    /// dead-letter table; 0 retries forever (the default).
    public var maxRetries = 0
    /// How long a shutdown keeps uploading what is queued. The default is 5 s.
    public var shutdownTimeoutMilliseconds = 5_000
    /// How long to wait before trying again after a configuration error
    /// (403, 404, …). The default is 5 minutes.
    public var holdMilliseconds = 300_000
    /// Sent as `EdgeIngest-Client`. The default is the host name.
    public var clientID: String
    /// The level of routine messages (the uploader started, stopped with
    /// nothing left): `info` in the agent's journal, `debug` inside an
    /// application (the library stays quiet unless asked).
    public var routineLogLevel: Logger.Level = .info

    public init(http: HTTPSettings, clientID: String) {
        self.http = http
        self.clientID = clientID
    }
}
