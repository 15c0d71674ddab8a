import Logging

/// Where a queue lives and how it behaves.
///
/// ```swift
/// var configuration = QueueConfiguration(
///     location: .file(path: "/var/lib/ingestd/queue.sqlite"),
///     objectTypes: [try WeatherSensor.recordType()]
/// )
/// configuration.maxBytes = 64 << 20
/// configuration.overflowPolicy = .dropOldest
/// let queue = try DurableQueue.open(configuration)
/// ```
@dynamicMemberLookup
public struct QueueConfiguration: Sendable {
    /// A file path, or an in-memory identifier (the seeds' `inMemoryIdentifier`).
    public struct Location: Hashable, Sendable, CustomStringConvertible {
        enum Kind: Hashable, Sendable {
            case file(String)
            case memory(String)
        }
        let kind: Kind

        /// One SQLite file at `path` (with `-wal` and `-shm` beside it while
        /// open). Its directory is created with mode 0700 and the file with
        /// mode 0600.
        public static func file(path: String) -> Location { Location(kind: .file(path)) }

        /// A queue held in memory under `identifier`: no file is created;
        /// every handle opened with the same identifier in this process
        /// shares it, and it is gone when the last handle is released.
        public static func inMemory(identifier: String) -> Location { Location(kind: .memory(identifier)) }

        /// The file path, or nil for an in-memory queue.
        public var path: String? {
            if case .file(let path) = kind { return path }
            return nil
        }

        public var description: String {
            switch kind {
            case .file(let path): return path
            case .memory(let identifier): return "in-memory queue '\(identifier)'"
            }
        }
    }

    /// Where the queue lives.
    public var location: Location

    /// The record types this queue accepts (the seeds' `objectTypes`): a
    /// record of any other type is refused with
    /// ``EdgeIngestError/Code/unknownObjectType``. Must not be empty.
    public var objectTypes: [RecordType]

    /// Rewrites records of an older schema version when the queue is
    /// opened with a higher ``schemaVersion``; all in one transaction,
    /// nothing changed if any record fails. Without it, older records keep
    /// their version and are uploaded as they are. The default is nil.
    public var migrationBlock: MigrationBlock?

    /// Decides at open whether to rewrite the file to its used size
    /// (`VACUUM`), given the file's total bytes and the bytes in use (the
    /// seeds' `shouldCompactOnLaunch`). The default compacts files over
    /// 64 MiB that are less than half used; nil never compacts.
    public var shouldCompactOnLaunch: (@Sendable (_ totalBytes: Int64, _ usedBytes: Int64) -> Bool)? =
        QueueConfiguration.defaultCompactOnLaunch

    /// Bounds, overflow policy, durability, schema version and encryption
    /// key (``QueueSettings``; each is also readable and settable here by
    /// its own name: `configuration.maxBytes`).
    public var settings = QueueSettings()

    /// Whether a damaged file is renamed aside (`<file>.corrupt-<ms>`) and
    /// a new queue started. The default is false: opening fails with
    /// ``EdgeIngestError/Code/queueCorrupt`` and the file is left untouched.
    public var quarantineCorruptFile = false

    /// Set by ``DurableQueue/openForReading(_:logger:)``: no lock, nothing written.
    package var readOnly = false

    /// Whether to run SQLite's `quick_check` over the whole file at open
    /// (O(file size); see docs/QUEUE.md for its cost). The default is false:
    /// the header, format and schema are always checked.
    public var verifyIntegrityOnOpen = false

    /// The level of routine messages (a compaction on launch): `info` in
    /// the agent, `debug` for a realm opened by an application.
    package var routineLogLevel: Logger.Level = .info

    /// Creates a configuration; see each property for its default.
    public init(location: Location, objectTypes: [RecordType]) {
        self.location = location
        self.objectTypes = objectTypes
    }

    /// Compact files over 64 MiB that are less than half used.
    public static let defaultCompactOnLaunch: @Sendable (Int64, Int64) -> Bool = { total, used in
        total > 64 << 20 && used * 2 < total
    }

    func validated() throws -> QueueConfiguration {
        guard !objectTypes.isEmpty else {
            throw EdgeIngestError(
                .invalidConfiguration,
                "The queue for \(location) has no object types: declare at least one record type it accepts."
            )
        }
        var names = Set<String>()
        for type in objectTypes where !names.insert(type.name).inserted {
            throw EdgeIngestError(
                .invalidConfiguration,
                "Record type '\(type.name)' is declared twice in the queue's object types."
            )
        }
        if let maxRecords = settings.maxRecords, maxRecords < 1 {
            throw EdgeIngestError(.invalidConfiguration, "max_records must be at least 1, got \(maxRecords).")
        }
        if let maxBytes = settings.maxBytes, maxBytes < 1024 {
            throw EdgeIngestError(.invalidConfiguration, "max_bytes must be at least 1024, got \(maxBytes).")
        }
        if case .file(let path) = location.kind, path.isEmpty {
            throw EdgeIngestError(
                .invalidConfiguration,
                "The queue's file path is empty: give a path or an in-memory identifier."
            )
        }
        if case .memory(let identifier) = location.kind, identifier.isEmpty {
            throw EdgeIngestError(.invalidConfiguration, "The queue's in-memory identifier is empty.")
        }
        return self
    }
}

extension QueueConfiguration {
    /// Each of ``settings`` by its own name: `configuration.maxBytes = 64 << 20`.
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<QueueSettings, Value>) -> Value {
        get { settings[keyPath: keyPath] }
        set { settings[keyPath: keyPath] = newValue }
    }
}

extension QueueConfiguration {
    /// What a second open of the same queue in one process must agree on
    /// with the first (it gets the same handle): the settings that differ.
    /// The migration block cannot be compared; the schema version stands for it.
    func settingsDiffering(from other: QueueConfiguration) -> [String] {
        var differing: [String] = []
        if objectTypes != other.objectTypes { differing.append("object types") }
        let mine = settings
        let theirs = other.settings
        if mine.encryptionKey != theirs.encryptionKey { differing.append("encryption key") }
        if mine.schemaVersion != theirs.schemaVersion { differing.append("schema version") }
        if mine.maxRecords != theirs.maxRecords || mine.maxBytes != theirs.maxBytes { differing.append("bound") }
        if mine.overflowPolicy != theirs.overflowPolicy { differing.append("overflow policy") }
        if mine.durability != theirs.durability { differing.append("durability") }
        if mine.compression != theirs.compression { differing.append("compression") }
        return differing
    }
}
