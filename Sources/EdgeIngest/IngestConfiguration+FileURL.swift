import FoundationEssentials

extension IngestConfiguration {
    /// The queue file as a file URL (the seeds' `fileURL`); the same
    /// setting as ``IngestConfiguration/filePath``.
    ///
    /// ```swift
    /// var configuration = IngestConfiguration()
    /// configuration.fileURL = URL(fileURLWithPath: "/var/lib/sensors/weather.ingest.sqlite")
    /// ```
    ///
    /// A URL that is not a file URL is kept aside and opening fails with
    /// an error that says so.
    public var fileURL: URL? {
        get { filePath.map { URL(fileURLWithPath: $0) } }
        set {
            guard let newValue else {
                filePath = nil
                notAFileURL = nil
                return
            }
            if newValue.isFileURL {
                filePath = newValue.path
                notAFileURL = nil
            } else {
                filePath = nil
                notAFileURL = "\(newValue)"
            }
        }
    }
}
