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
            // Setting filePath clears notAFileURL.
            filePath = newValue?.isFileURL == false ? nil : newValue?.path
            if let newValue, !newValue.isFileURL { notAFileURL = "\(newValue)" }
        }
    }
}
