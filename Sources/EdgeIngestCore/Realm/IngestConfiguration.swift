/// How to open an ``IngestRealm``: the seeds' `Realm.Configuration` for a
/// write-only queue.
///
/// ```swift
/// var configuration = user.configuration()          // a file under the app's metadata directory
/// configuration.objectTypes = [WeatherSensor.self]  // the subset this realm accepts
/// configuration.schemaVersion = 2
/// let realm = try await IngestRealm(configuration: configuration)
///
/// var scratch = IngestConfiguration()
/// scratch.inMemoryIdentifier = "YOUR-IDENTIFIER-STRING"   // no file at all
/// ```
///
/// At most one of ``filePath`` (or `fileURL`, with `import EdgeIngest`)
/// and ``inMemoryIdentifier`` may be set; opening with both fails with a
/// clear error.
@dynamicMemberLookup
public struct IngestConfiguration: Sendable {
    /// The queue file (an SQLite file with `-wal`/`-shm` beside it while
    /// open). With neither this nor ``inMemoryIdentifier`` set, the file is
    /// `<metadata directory>/users/<user id>/default.ingest.sqlite` for a
    /// configuration with a ``user``, else ``defaultFilePath``.
    /// ``defaultConfiguration`` has it set to ``defaultFilePath``, so the
    /// seeds' `fileURL!.deletingLastPathComponent()` works.
    /// `import EdgeIngest` adds `fileURL: URL?`, the seeds' name for it.
    public var filePath: String? {
        didSet { notAFileURL = nil }
    }
    /// Set by `fileURL` when given a URL that is not a file URL (opening
    /// then fails and says so).
    package var notAFileURL: String?
    /// Keep the queue in memory under this identifier: no file is created,
    /// and it is gone when the last realm using it is released.
    public var inMemoryIdentifier: String?
    /// The record types declared in Swift that this realm accepts (the
    /// seeds' `objectTypes`). Empty (the default) means every type in
    /// ``recordTypes``; at least one type must be declared in all.
    public var objectTypes: [AsymmetricObject.Type] = []
    /// Record types declared at run time (for example from a TOML file),
    /// accepted besides ``objectTypes``.
    public var recordTypes: [RecordType] = []
    /// The queue's bounds, overflow policy, durability, schema version and
    /// encryption key, each also readable and settable here by its own name
    /// (the seeds' `configuration.schemaVersion = 2`, `encryptionKey`):
    /// see ``QueueSettings`` for the defaults.
    public var queue = QueueSettings()
    /// Rewrites queued records of an older schema version at open (the
    /// seeds' `migrationBlock`, called once per record). See ``MigrationRecord``.
    public var migrationBlock: MigrationBlock?
    /// Decides at open whether to rewrite the file to its used size, given
    /// its total and used bytes (the seeds' `shouldCompactOnLaunch`).
    public var shouldCompactOnLaunch: (@Sendable (_ totalBytes: Int64, _ usedBytes: Int64) -> Bool)? =
        QueueConfiguration.defaultCompactOnLaunch
    /// The user whose session uploads the records; nil for a local-only
    /// realm that only queues (export it with ``IngestRealm/writeCopy(configuration:)``).
    public var user: User?
    /// What happens when the backend demands a client reset. The default
    /// is ``ClientResetMode/recoverUnsyncedChanges(beforeReset:afterReset:)``,
    /// as in the seeds.
    public var clientResetMode: ClientResetMode = .recoverUnsyncedChanges()
    /// Batching, linger, retries and backoff of the background upload.
    public var upload = UploadOptions()

    /// A local configuration with every default.
    public init() {}

    private static let defaultStorage = PlainMutex(
        {
            var configuration = IngestConfiguration()
            configuration.filePath = IngestConfiguration.defaultFilePath
            return configuration
        }()
    )

    /// The directory of the default realm and of ``App``'s default
    /// metadata: `$STATE_DIRECTORY` for a systemd service with
    /// `StateDirectory=`, else `$XDG_DATA_HOME/<program>`, else
    /// `~/.local/share/<program>` (`<program>`: the executable's file
    /// name), else the current directory. Read from the environment each
    /// time; created when a realm is opened there.
    ///
    /// ```swift
    /// // ~/.local/share/weather-station/default.ingest.sqlite for ./weather-station
    /// print(IngestConfiguration.defaultFilePath)
    /// ```
    public static var defaultDirectory: String { DefaultLocation.directory() }

    /// `<defaultDirectory>/default.ingest.sqlite`: the default realm's file.
    public static var defaultFilePath: String { defaultDirectory + "/default.ingest.sqlite" }

    /// The configuration `IngestRealm()` opens when given none, with
    /// ``filePath`` set to ``defaultFilePath``; replace it once at start-up.
    public static var defaultConfiguration: IngestConfiguration {
        get { defaultStorage.withLock { $0 } }
        set { defaultStorage.withLock { $0 = newValue } }
    }

    /// The queue configuration this describes, after checking it.
    func queueConfiguration() throws -> QueueConfiguration {
        let location: QueueConfiguration.Location
        if let notAFileURL {
            throw EdgeIngestError(
                .invalidConfiguration,
                "fileURL '\(notAFileURL)' is not a file URL: use URL(fileURLWithPath:)."
            )
        }
        switch (filePath, inMemoryIdentifier) {
        case (.some(let path), .some(let identifier)):
            throw EdgeIngestError(
                .invalidConfiguration,
                "The configuration sets both a file ('\(path)') and inMemoryIdentifier '\(identifier)': set one of them, not both."
            )
        case (.some(let path), nil):
            location = .file(path: path)
        case (nil, .some(let identifier)):
            location = .inMemory(identifier: identifier)
        case (nil, nil):
            if let user {
                location = .file(
                    path: user.app.configuration.metadataDirectory + "/users/" + user.id + "/default.ingest.sqlite"
                )
            } else {
                location = .file(path: Self.defaultFilePath)
            }
        }
        var types = try objectTypes.map { try $0.recordType() }
        for type in recordTypes where !types.contains(where: { $0.name == type.name }) { types.append(type) }
        var configuration = QueueConfiguration(location: location, objectTypes: types)
        configuration.settings = queue
        configuration.shouldCompactOnLaunch = shouldCompactOnLaunch
        configuration.migrationBlock = migrationBlock
        configuration.routineLogLevel = .debug  // an application's realm is quiet unless asked
        return configuration
    }

    /// Each of ``queue``'s settings by its own name: `configuration.schemaVersion = 2`.
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<QueueSettings, Value>) -> Value {
        get { queue[keyPath: keyPath] }
        set { queue[keyPath: keyPath] = newValue }
    }

    /// Whether both configurations are of the same kind (both with a user,
    /// or both local), as ``IngestRealm/writeCopy(configuration:)`` requires.
    func isSameKind(as other: IngestConfiguration) -> Bool { (user == nil) == (other.user == nil) }
}

/// How the background upload batches and retries (the agent's `[upload]`
/// section, for the SDK).
public struct UploadOptions: Sendable {
    /// Records per request. The default is 4000 (docs/BENCHMARKS.md,
    /// "Side by side with Fluent Bit": a quarter of the acknowledgements'
    /// writes per reading).
    public var maxRecords = UploadDefaults.maxRecords
    /// Uncompressed bytes per request (about). The default is 1 MiB.
    public var maxBytes = UploadDefaults.maxBytes
    /// How long a partial batch waits for more records. The default is 200 ms.
    public var lingerMilliseconds = UploadDefaults.lingerMilliseconds
    /// Retry delays: full jitter between 0 and min(cap, base × 2^attempt).
    public var backoff = Backoff()
    /// Compress request bodies with gzip. The default is false.
    public var gzip = false
    /// How long closing the realm keeps uploading what is queued. The default is 2 s.
    public var closeTimeoutMilliseconds = 2_000
    /// Sent as `EdgeIngest-Client`. The default is the host name.
    public var clientID = hostName()

    public init() {}
}

extension User {
    /// A configuration that uploads under this user's session, with its
    /// queue file in the user's directory
    /// (`<metadata directory>/users/<id>/default.ingest.sqlite`) unless
    /// ``IngestConfiguration/filePath`` or ``IngestConfiguration/inMemoryIdentifier``
    /// is set: the seeds' `flexibleSyncConfiguration()`.
    ///
    /// ```swift
    /// var configuration = user.configuration()
    /// configuration.objectTypes = [WeatherSensor.self]
    /// ```
    public func configuration(clientResetMode: ClientResetMode = .recoverUnsyncedChanges()) -> IngestConfiguration {
        var configuration = IngestConfiguration()
        configuration.user = self
        configuration.clientResetMode = clientResetMode
        return configuration
    }
}
