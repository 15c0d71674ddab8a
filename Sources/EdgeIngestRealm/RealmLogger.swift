import EdgeIngest
import Logging

extension Realm {
    private static let loggerStorage = PlainMutex(Logger(label: "edgeingest"))

    /// Where realms opened through this module log: by default
    /// `Logger(label: "edgeingest")`, which goes wherever the application
    /// bootstrapped swift-log. Routine events (the upload started or
    /// stopped, a compaction) are at `debug`; only problems are above.
    /// Set it once at start-up to log elsewhere or at another level:
    ///
    /// ```swift
    /// var logger = Logger(label: "weather.ingest")
    /// logger.logLevel = .debug
    /// Realm.logger = logger
    /// ```
    public static var logger: Logger {
        get { loggerStorage.withLock { $0 } }
        set { loggerStorage.withLock { $0 = newValue } }
    }
}
