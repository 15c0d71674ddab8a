/// How a queue bounds itself, how durable an append is, which schema
/// version it stamps and whether it encrypts: the settings the agent's
/// `[queue]` section, ``IngestConfiguration`` and ``QueueConfiguration``
/// share, with their defaults in this one place.
///
/// ```swift
/// var settings = QueueSettings()
/// settings.maxBytes = 64 << 20
/// settings.overflowPolicy = .dropOldest
/// var configuration = QueueConfiguration(location: .file(path: path), objectTypes: types)
/// configuration.settings = settings
/// ```
public struct QueueSettings: Sendable {
    /// The most bytes of encoded records the queue holds; nil for no bound.
    /// The file is larger by SQLite's page overhead (see docs/QUEUE.md).
    /// The default is 256 MiB.
    public var maxBytes: Int64? = 256 << 20
    /// The most records the queue holds; nil for no bound. The default is nil.
    public var maxRecords: Int64?
    /// What happens to records that do not fit. The default is ``OverflowPolicy/block``.
    public var overflowPolicy: OverflowPolicy = .block
    /// How durable an append is once it returns. The default is
    /// ``Durability/powerLossSafe``.
    public var durability: Durability = .powerLossSafe
    /// The schema version stamped on every appended record. Opening a queue
    /// that holds records of a higher version fails. The default is 0.
    public var schemaVersion: Int64 = 0
    /// A 64-byte key: record payloads (and dead letters) are stored
    /// encrypted with AES-256-GCM (see docs/QUEUE.md for what is and is not
    /// protected). A queue created with a key opens only with that key; a
    /// queue with unencrypted records cannot be given one. The default is
    /// nil (no encryption). Never printed.
    public var encryptionKey: [UInt8]?
    /// How new segments are stored. The default, ``QueueCompression/zstd``,
    /// writes a fraction of the bytes to the device (flash wear) and holds
    /// several times more readings offline in the same `maxBytes` of file.
    /// Either way, segments of both kinds are read.
    public var compression: QueueCompression = .zstd
    /// The page cache of the connection once a gateway (or an MQTT input
    /// with a dedup window) keeps received ids: their groups and runs are
    /// looked up at keys spread over their tables. 16 MiB by default;
    /// the agent gives less under a small memory limit
    /// (`MemoryLimit.receivedIDsCacheBytes`: the cache is the largest
    /// part of a gateway's own memory).
    package var receivedIDsCacheBytes = 16 << 20

    /// Every default.
    public init() {}
}

/// How a queue stores the records of a new segment (docs/QUEUE.md,
/// "Compressed segments").
///
/// ```swift
/// var settings = QueueSettings()
/// settings.compression = .none  // a queue read by EdgeIngest before format 3's codecs
/// ```
public enum QueueCompression: String, Sendable, CaseIterable {
    /// The JSON lines as they are.
    case none
    /// One zstd frame (level 1) per segment, when that is smaller.
    case zstd
}
