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

    /// Per record type name: the acceptance time and clock fields added to
    /// its records as they leave the queue, and whether records accepted
    /// before the clock was synchronised wait for it
    /// (``AcceptanceStamping``). The default is none.
    public var acceptanceStamps: [String: AcceptanceStamping] = [:]

    /// Per record type name: its priority, drain order and maximum age in
    /// the queue (``TypeDelivery``). The default is none: every type at
    /// priority 0, oldest first, kept until delivered.
    public var typeDelivery: [String: TypeDelivery] = [:]

    /// The sinks its records go to, and which types go to which
    /// (``QueueRouting``). The default is ``QueueRouting/single``: one sink,
    /// every type.
    public var routing = QueueRouting.single

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
        for (name, stamping) in acceptanceStamps {
            guard let type = objectTypes.first(where: { $0.name == name }) else {
                throw EdgeIngestError(
                    .invalidConfiguration,
                    "Acceptance fields are set for '\(name)', which is not one of the queue's object types."
                )
            }
            for field in [stamping.timeField, stamping.clockField].compactMap({ $0 }) {
                if field.isEmpty || !field.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x22 && $0 != 0x5C }) {
                    throw EdgeIngestError(
                        .invalidConfiguration,
                        "The acceptance field name '\(field)' of '\(name)' must be non-empty, without quotes, backslashes or control characters."
                    )
                }
                if field == RecordType.primaryKey || type.fieldIndex(named: field) != nil
                    || field == stamping.clockField && field == stamping.timeField
                {
                    throw EdgeIngestError(
                        .invalidConfiguration,
                        "The acceptance field '\(field)' of '\(name)' is already one of its fields: choose a name of its own."
                    )
                }
            }
        }
        _ = try routing.validated(types: objectTypes)
        for (name, delivery) in typeDelivery {
            guard objectTypes.contains(where: { $0.name == name }) else {
                throw EdgeIngestError(
                    .invalidConfiguration,
                    "Delivery settings are given for '\(name)', which is not one of the queue's object types."
                )
            }
            if let share = delivery.share, !(share > 0 && share <= 1) {
                throw EdgeIngestError(
                    .invalidConfiguration,
                    "The share of '\(name)' must be above 0 and at most 1 (a part of max_bytes), got \(share)."
                )
            }
            if let age = delivery.maxAgeMilliseconds, age < 1_000 {
                throw EdgeIngestError(
                    .invalidConfiguration,
                    "The maximum age of '\(name)' must be at least 1 s (1000 ms), got \(age) ms."
                )
            }
        }
        let shares = typeDelivery.values.compactMap(\.share)
        if !shares.isEmpty {
            if settings.maxBytes == nil {
                throw EdgeIngestError(
                    .invalidConfiguration,
                    "Type shares are parts of max_bytes, and the queue has no max_bytes: set one, or remove the shares."
                )
            }
            if shares.reduce(0, +) > 1.000_001 {
                throw EdgeIngestError(
                    .invalidConfiguration,
                    "The types' shares add up to \(shares.reduce(0, +)), more than the whole queue (1)."
                )
            }
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
        if acceptanceStamps != other.acceptanceStamps { differing.append("acceptance stamps") }
        if typeDelivery != other.typeDelivery { differing.append("type delivery") }
        if routing != other.routing { differing.append("sinks") }
        return differing
    }
}

extension QueueConfiguration {
    /// The `ORDER BY` that puts segments in the order ``typeDelivery``
    /// asks for — higher priority first; then each type's drain order
    /// (newest-first types before oldest-first ones of the same priority)
    /// — or nil when every type leaves oldest first at one priority (the
    /// queue's own order, read without sorting).
    var segmentOrderSQL: String? {
        let reordering = typeDelivery.filter { $0.value.reorders }.sorted { $0.key < $1.key }
        guard !reordering.isEmpty else { return nil }
        let priorities = reordering.filter { $0.value.priority != 0 }
            .map { "WHEN \(sqlStringLiteral($0.key)) THEN \($0.value.priority)" }
        let newest = reordering.filter { $0.value.drainOrder == .newestFirst }.map { sqlStringLiteral($0.key) }
        let position =
            newest.isEmpty ? "id" : "CASE WHEN type IN (\(newest.joined(separator: ", "))) THEN -id ELSE id END"
        guard !priorities.isEmpty else { return position }
        return "CASE type \(priorities.joined(separator: " ")) ELSE 0 END DESC, \(position)"
    }
}

extension QueueConfiguration {
    /// Each type's share (``TypeDelivery/share``) in bytes of ``QueueSettings/maxBytes``.
    var reservedBytes: [String: Int64] {
        guard let maxBytes = settings.maxBytes else { return [:] }
        return typeDelivery.compactMapValues { delivery in delivery.share.map { Int64(Double(maxBytes) * $0) } }
    }
}
