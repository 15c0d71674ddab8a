import EdgeIngest
import Foundation

extension Realm {
    /// How to open a ``Realm``: Realm's `Realm.Configuration`, mapped onto
    /// ``IngestConfiguration`` (available as ``ingestConfiguration`` for
    /// what only the primary API has: upload batching, queue bounds).
    ///
    /// ```swift
    /// var config = Realm.Configuration.defaultConfiguration
    /// config.fileURL!.deleteLastPathComponent()
    /// config.fileURL!.appendPathComponent("GordonCole")
    /// config.fileURL!.appendPathExtension("realm")
    /// config.objectTypes = [WeatherSensor.self]
    /// let realm = try Realm(configuration: config)
    /// ```
    ///
    /// As in Realm, setting ``fileURL`` clears ``inMemoryIdentifier`` and
    /// the other way round.
    public struct Configuration: Sendable {
        /// The configuration of the primary API this one maps onto.
        public var ingestConfiguration: IngestConfiguration

        /// Creates a configuration; every argument has Realm's meaning.
        /// `fileURL` defaults to `default.realm` in
        /// ``IngestConfiguration/defaultDirectory``.
        public init(
            fileURL: URL? = URL(fileURLWithPath: IngestConfiguration.defaultDirectory + "/default.realm"),
            inMemoryIdentifier: String? = nil,
            encryptionKey: Data? = nil,
            schemaVersion: UInt64 = 0,
            migrationBlock: MigrationBlock? = nil,
            shouldCompactOnLaunch: (@Sendable (_ totalBytes: Int, _ usedBytes: Int) -> Bool)? = nil,
            objectTypes: [AsymmetricObject.Type]? = nil
        ) {
            ingestConfiguration = IngestConfiguration()
            self.fileURL = fileURL
            if let inMemoryIdentifier { self.inMemoryIdentifier = inMemoryIdentifier }
            self.encryptionKey = encryptionKey
            self.schemaVersion = schemaVersion
            // Observers do not run in an initializer: map these here.
            self.migrationBlock = migrationBlock
            ingestConfiguration.migrationBlock = migrationBlock.map { Migration.perRecord($0, types: []) }
            self.shouldCompactOnLaunch = shouldCompactOnLaunch
            if let shouldCompactOnLaunch {  // else EdgeIngest's default policy stays
                ingestConfiguration.shouldCompactOnLaunch = Self.mapped(shouldCompactOnLaunch)
            }
            self.objectTypes = objectTypes
        }

        init(_ ingestConfiguration: IngestConfiguration) { self.ingestConfiguration = ingestConfiguration }

        /// What opening uses: with no object types, the default
        /// configuration's (Realm finds every type of the program; Swift
        /// on Linux cannot, so declare them once there).
        var resolved: IngestConfiguration {
            var resolved = ingestConfiguration
            if resolved.objectTypes.isEmpty, resolved.recordTypes.isEmpty {
                resolved.objectTypes = Configuration.defaultConfiguration.ingestConfiguration.objectTypes
            }
            if let migrationBlock {
                let types =
                    resolved.recordTypes + resolved.objectTypes.compactMap { try? $0.recordType() }
                resolved.migrationBlock = Migration.perRecord(migrationBlock, types: types)
            }
            return resolved
        }

        /// ``resolved``, for opening a realm: refused without a sync user,
        /// as Realm refuses asymmetric types in a local realm.
        func opening() throws -> IngestConfiguration {
            let resolved = self.resolved
            guard resolved.user != nil else {
                let names = (resolved.objectTypes.map { $0.recordTypeName } + resolved.recordTypes.map(\.name))
                throw Realm.Error(
                    EdgeIngestError(
                        .invalidConfiguration,
                        "This configuration has no sync user, and a write-only realm's AsymmetricObject types (\(names.isEmpty ? "none declared" : names.joined(separator: ", "))) can only be used in a synced realm: records of a local realm would never upload. Log in and open user.flexibleSyncConfiguration() with objectTypes set (Realm refuses asymmetric types in a local realm too); to keep records on the device for another program to upload, use EdgeIngest's IngestRealm with a local IngestConfiguration."
                    )
                )
            }
            return resolved
        }

        private static let defaultStorage = PlainMutex(Configuration())

        /// The configuration `Realm()` opens; its ``fileURL`` is
        /// `<IngestConfiguration.defaultDirectory>/default.realm`.
        public static var defaultConfiguration: Configuration {
            get { defaultStorage.withLock { $0 } }
            set { defaultStorage.withLock { $0 = newValue } }
        }

        /// The realm's file. Setting it clears ``inMemoryIdentifier``.
        public var fileURL: URL? {
            get { ingestConfiguration.fileURL }
            set {
                ingestConfiguration.fileURL = newValue
                if newValue != nil { ingestConfiguration.inMemoryIdentifier = nil }
            }
        }

        /// Keep the realm in memory under this name: no file. Setting it clears ``fileURL``.
        public var inMemoryIdentifier: String? {
            get { ingestConfiguration.inMemoryIdentifier }
            set {
                ingestConfiguration.inMemoryIdentifier = newValue
                if newValue != nil { ingestConfiguration.filePath = nil }
            }
        }

        /// The 64-byte key the file is encrypted with (AES-256-GCM here,
        /// docs/QUEUE.md "Encryption"; a Realm file cannot be opened).
        public var encryptionKey: Data? {
            get { ingestConfiguration.encryptionKey.map { Data($0) } }
            set { ingestConfiguration.encryptionKey = newValue.map { [UInt8]($0) } }
        }

        /// The schema version of the records written.
        public var schemaVersion: UInt64 {
            get { UInt64(clamping: ingestConfiguration.schemaVersion) }
            set { ingestConfiguration.schemaVersion = Int64(clamping: newValue) }
        }

        /// Rewrites queued records of an older schema version at open; see
        /// ``Migration`` for what it is called with.
        public var migrationBlock: MigrationBlock? {
            didSet { ingestConfiguration.migrationBlock = migrationBlock.map { Migration.perRecord($0, types: []) } }
        }

        /// Decides at open whether to compact the file, given its total and used bytes.
        public var shouldCompactOnLaunch: (@Sendable (_ totalBytes: Int, _ usedBytes: Int) -> Bool)? {
            didSet {
                guard let decide = shouldCompactOnLaunch else {
                    ingestConfiguration.shouldCompactOnLaunch = nil
                    return
                }
                ingestConfiguration.shouldCompactOnLaunch = Self.mapped(decide)
            }
        }

        private static func mapped(
            _ decide: @escaping @Sendable (Int, Int) -> Bool
        ) -> @Sendable (Int64, Int64) -> Bool {
            { @Sendable (total: Int64, used: Int64) in decide(Int(clamping: total), Int(clamping: used)) }
        }

        /// The record types this realm accepts; nil (or empty) means those
        /// of ``defaultConfiguration`` (set them there once: unlike Realm,
        /// the program's types are not found by themselves). Only
        /// ``AsymmetricObject`` types: nothing else is write-only.
        public var objectTypes: [AsymmetricObject.Type]? {
            get { ingestConfiguration.objectTypes.isEmpty ? nil : ingestConfiguration.objectTypes }
            set { ingestConfiguration.objectTypes = newValue ?? [] }
        }

        /// The user and client-reset mode of a configuration made by
        /// `user.flexibleSyncConfiguration()`; nil for a local realm.
        public var syncConfiguration: SyncConfiguration? {
            ingestConfiguration.user.map { SyncConfiguration(user: $0, clientResetMode: clientResetMode) }
        }

        /// Kept beside ``ingestConfiguration``'s mapped mode (whose blocks
        /// receive the primary API's realms).
        var clientResetMode: ClientResetMode = .recoverUnsyncedChanges() {
            didSet { ingestConfiguration.clientResetMode = clientResetMode.ingestMode }
        }

        @available(
            *,
            unavailable,
            message:
                "A write-only realm cannot be opened read-only: there is nothing to read. Open it normally and write."
        )
        public var readOnly: Bool { false }

        @available(
            *,
            unavailable,
            message:
                "Queued records are never deleted for a schema change: give a migrationBlock (or raise schemaVersion and keep old fields optional)."
        )
        public var deleteRealmIfMigrationNeeded: Bool { false }
    }

    /// The sync part of a configuration: Realm's `SyncConfiguration`, read-only.
    public struct SyncConfiguration: Sendable {
        /// The user whose session uploads the records.
        public let user: User
        /// What happens when the backend demands a client reset.
        public let clientResetMode: ClientResetMode
    }
}
