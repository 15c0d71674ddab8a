/// The version of EdgeIngest and ingestd.
public enum EdgeIngestVersion {
    /// The release this build comes from, as `MAJOR.MINOR.PATCH`.
    public static let current = "0.2.0"
}
