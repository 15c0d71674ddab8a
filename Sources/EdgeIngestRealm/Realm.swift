import Dispatch
import EdgeIngest
import Foundation

/// A write-only realm: Realm's `Realm` for Data Ingest, mapped onto
/// ``IngestRealm`` (the primary API, available as ``ingestRealm``).
///
/// ```swift
/// let app = App(id: APPID, configuration: AppConfiguration(baseURL: "https://ingest.example.com"))
/// let user = try await app.login(credentials: .anonymous)
/// var config = user.flexibleSyncConfiguration()
/// config.objectTypes = [WeatherSensor.self]
/// let realm = try await Realm(configuration: config)
/// try realm.write {
///     realm.create(WeatherSensor.self, value: [
///         "_id": ObjectId.generate(), "deviceId": "WX1278UIT",
///         "temperatureInFahrenheit": 66.7, "barometricPressureInHg": 29.65, "windSpeedInMph": 2,
///     ])
/// }
/// ```
///
/// As in Realm, ``create(_:value:)`` is called inside ``write(_:)`` and
/// does not throw; unlike Realm, a value that does not fit the object type
/// does not crash: the enclosing `write` throws an ``EdgeIngestError``
/// that names the field and stores none of the block's records. Records
/// cannot be read back (``objects(_:)`` is unavailable); they leave the
/// device once the backend confirmed them. A realm can be used from any
/// thread or actor.
public final class Realm: Sendable, CustomStringConvertible {
    /// The realm of the primary API this one maps onto.
    public let ingestRealm: IngestRealm
    /// The write blocks running now, by file (every `Realm` on one file
    /// shares them, as Realm's instances of one file on one thread are one).
    private static let transactions = PlainMutex<[ObjectIdentifier: OpenTransaction]>([:])
    /// Serializes write blocks on one file, as a Realm write transaction does.
    private static let writers = PlainMutex<[ObjectIdentifier: PlainLock]>([:])

    /// The write block running now: its thread and the records it created.
    // Unchecked: `thread` is a plain value; `steps` is touched only by that thread.
    private struct OpenTransaction: @unchecked Sendable {
        let thread: pthread_t
        let steps = Steps()
    }

    /// Touched only by the thread that runs the write block.
    private final class Steps: @unchecked Sendable {
        var list: [(IngestTransaction) throws -> Void] = []
    }

    private var file: ObjectIdentifier { ingestRealm.queueIdentity }

    /// The configuration the realm was opened with.
    public let configuration: Configuration

    init(_ ingestRealm: IngestRealm, configuration: Configuration? = nil) {
        self.ingestRealm = ingestRealm
        self.configuration = configuration ?? Configuration(ingestRealm.configuration)
    }

    /// A realm handed to a client-reset block: its configuration reports `mode`.
    convenience init(_ ingestRealm: IngestRealm, mode: ClientResetMode) {
        var configuration = Configuration(ingestRealm.configuration)
        if ingestRealm.configuration.user != nil { configuration.clientResetMode = mode }
        self.init(ingestRealm, configuration: configuration)
    }

    /// Opens the realm now, without waiting for the backend (Realm's
    /// synchronous `Realm(configuration:queue:)`; `queue` is accepted and
    /// not needed: this realm is not confined to a thread).
    ///
    /// - Throws: ``Realm/Error`` (see ``IngestRealm/init(configuration:openBehavior:timeout:logger:)``).
    public convenience init(
        configuration: Configuration = .defaultConfiguration,
        queue: DispatchQueue? = nil
    ) throws {
        try self.init(
            reportingRealmErrors { try IngestRealm(openingNow: configuration.opening(), logger: Realm.logger) },
            configuration: configuration
        )
    }

    /// Opens the realm, first reaching the backend as `downloadBeforeOpen`
    /// says (for a write-only realm there is nothing to download: `.always`
    /// refreshes the session and fails with ``EdgeIngestError/Code/offline``
    /// when the backend cannot be reached in 30 s).
    public convenience init(
        configuration: Configuration = .defaultConfiguration,
        downloadBeforeOpen: OpenBehavior = .never
    ) async throws {
        let opening = try configuration.opening()
        let realm = try await reportingRealmErrorsAsync {
            try await IngestRealm(
                configuration: opening,
                openBehavior: downloadBeforeOpen,
                logger: Realm.logger
            )
        }
        self.init(realm, configuration: configuration)
    }

    /// Realm's actor-isolated open. This realm is `Sendable` and needs no
    /// isolation: `actor` is accepted so the seeds' code compiles, and the
    /// realm works from it as from anywhere.
    public convenience init<A: Actor>(
        configuration: Configuration = .defaultConfiguration,
        actor: A,
        downloadBeforeOpen: OpenBehavior = .never
    ) async throws {
        try await self.init(configuration: configuration, downloadBeforeOpen: downloadBeforeOpen)
    }

    /// A frozen realm (a client reset's `before` copy) refuses writes.
    public var isFrozen: Bool { ingestRealm.isFrozen }

    /// Whether a write block of this realm runs on the calling thread.
    public var isInWriteTransaction: Bool {
        Realm.transactions.withLock { $0[file].map { pthread_equal($0.thread, pthread_self()) != 0 } ?? false }
    }

    /// Runs `block`, in which ``create(_:value:)`` adds records, and stores
    /// them all durably when it returns (or none if it throws or a record
    /// does not fit its type). Blocks while a full queue under
    /// ``OverflowPolicy/block`` waits for space.
    ///
    /// - Throws: what `block` throws; ``Realm/Error`` for a record that
    ///   does not validate (naming the field) or a queue that refuses it;
    ///   ``EdgeIngestError/Code/invalidConfiguration`` for a write inside a write.
    @discardableResult
    public func write<Result>(
        withoutNotifying tokens: [NotificationToken] = [],
        _ block: () throws -> Result
    ) throws -> Result {
        let (steps, result) = try collect(block)
        if !steps.isEmpty {
            try reportingRealmErrors {
                try ingestRealm.write { transaction in for step in steps { try step(transaction) } }
            }
        }
        return result
    }

    /// ``write(withoutNotifying:_:)`` for async code: a full queue suspends
    /// the task instead of blocking a thread.
    @discardableResult
    public func asyncWrite<Result>(_ block: () throws -> Result) async throws -> Result {
        let (steps, result) = try collect(block)
        if !steps.isEmpty {
            try await reportingRealmErrorsAsync {
                try await ingestRealm.asyncWrite { transaction in for step in steps { try step(transaction) } }
            }
        }
        return result
    }

    private func collect<Result>(
        _ block: () throws -> Result
    ) throws -> ([(IngestTransaction) throws -> Void], Result) {
        guard !isInWriteTransaction else {
            throw Realm.Error(
                EdgeIngestError(
                    .invalidConfiguration,
                    "write was called inside a write block of the same realm: create all records in one block."
                )
            )
        }
        let file = self.file
        let writer = Realm.writers.withLock { writers in
            if let lock = writers[file] { return lock }
            let lock = PlainLock()
            writers[file] = lock
            return lock
        }
        writer.lock()
        defer { writer.unlock() }
        Realm.transactions.withLock { $0[file] = OpenTransaction(thread: pthread_self()) }
        defer { _ = Realm.transactions.withLock { $0.removeValue(forKey: file) } }
        let result = try block()
        let steps = Realm.transactions.withLock { $0[file]?.steps }?.list ?? []
        return (steps, result)
    }

    /// Adds a record of `type` built from `value` (a `[String: Any]`
    /// dictionary, or an instance of `type`) to the write block running on
    /// this thread. A missing `_id` is generated. Called outside a write
    /// block it stops the program, as in Realm.
    public func create<T: AsymmetricObject>(_ type: T.Type, value: Any = [String: Any]()) {
        if let object = value as? T {
            add { try $0.create(object) }
        } else if let dictionary = value as? [String: Any] {
            add { try $0.create(type, value: dictionary) }
        } else {
            add { _ in
                throw EdgeIngestError(
                    .invalidRecord,
                    "create(\(T.recordTypeName).self, value:) takes a [String: Any] dictionary or a \(T.recordTypeName), not \(Swift.type(of: value))."
                )
            }
        }
    }

    /// Adds `object` as a record to the write block running on this thread
    /// (the same as `create(T.self, value: object)`).
    public func add(_ object: AsymmetricObject) {
        add { try $0.create(object) }
    }

    private func add(_ step: @escaping (IngestTransaction) throws -> Void) {
        let steps = Realm.transactions.withLock { open in
            open[file].flatMap { pthread_equal($0.thread, pthread_self()) != 0 ? $0.steps : nil }
        }
        steps?.list.append(step)
        let added = steps != nil
        precondition(
            added,
            "Cannot create a record outside of a write transaction: call create inside realm.write { … } (or asyncWrite) on the same thread."
        )
    }

    /// Copies the records not yet uploaded into the realm `configuration`
    /// describes (created if needed), keeping their `_id`s: Realm's
    /// `writeCopy(configuration:)`. Between two configurations with a user,
    /// or two local ones.
    public func writeCopy(configuration: Configuration) throws {
        try reportingRealmErrors { _ = try ingestRealm.writeCopy(configuration: configuration.resolved) }
    }

    /// The realm's upload session (nil for a local realm).
    public var syncSession: SyncSession? {
        ingestRealm.configuration.user == nil ? nil : SyncSession(realm: ingestRealm)
    }

    /// Resolves a client reset left to the application
    /// (`.manual`, or a recovery that failed): see
    /// ``IngestRealm/resolveClientReset(discard:backup:)``. Realm's
    /// `SyncSession.immediatelyHandleError` has no counterpart.
    public func resolveClientReset(discard: Bool, backup: Configuration? = nil) throws {
        try reportingRealmErrors { try ingestRealm.resolveClientReset(discard: discard, backup: backup?.resolved) }
    }

    public var description: String { "Realm(\(ingestRealm))" }

    @available(
        *,
        unavailable,
        message:
            "A write-only realm cannot read records back: they leave the device once the backend confirmed them. Query the backend's database instead."
    )
    public func objects<T>(_ type: T.Type) -> [T] { [] }

    @available(
        *,
        unavailable,
        message: "A write-only realm cannot read records back: query the backend's database instead."
    )
    public func object<T>(ofType type: T.Type, forPrimaryKey key: Any) -> T? { nil }

    @available(
        *,
        unavailable,
        message:
            "Records of a write-only realm cannot be deleted: each leaves the device once the backend confirmed it."
    )
    public func delete(_ object: Any) {}
}

/// Realm's notification token. A write-only realm has no notifications:
/// the type exists so `write(withoutNotifying:)` compiles.
public final class NotificationToken: Sendable {
    /// Does nothing: there is nothing to stop.
    public func invalidate() {}
}
