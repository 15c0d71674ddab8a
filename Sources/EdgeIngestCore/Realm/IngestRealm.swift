import Logging

/// A write-only queue of records that streams them to the backend and
/// keeps each only until the backend confirmed it: the seeds' synced
/// `Realm` for Data Ingest (asymmetric objects), on edge Linux.
///
/// ```swift
/// let app = try App(id: "weather-fleet", configuration: AppConfiguration(
///     baseURL: "https://ingest.example.com", metadataDirectory: "/var/lib/myapp/edgeingest"))
/// let user = try await app.currentUser ?? app.login(credentials: .anonymous)
/// var configuration = user.configuration()
/// configuration.objectTypes = [WeatherSensor.self]
/// let realm = try await IngestRealm(configuration: configuration)   // offline is fine
/// try realm.write {
///     try $0.create(WeatherSensor.self, value: [
///         "_id": ObjectId.generate(), "deviceId": "WX1278UIT",
///         "temperatureInFahrenheit": 66.7, "barometricPressureInHg": 29.65, "windSpeedInMph": 2,
///     ])
/// }
/// ```
///
/// Writes are durable when `write` returns; with a ``IngestConfiguration/user``
/// they upload in the background (one uploader per file in the process,
/// on its own thread) while any realm on the file is open. Nothing reads
/// records back: ``statistics()`` gives counts.
public final class IngestRealm: Sendable, CustomStringConvertible {
    /// The configuration the realm was opened with.
    public let configuration: IngestConfiguration
    let queue: DurableQueue
    let upload: BackgroundUpload?
    let resetHandler: ClientResetHandler?
    /// A frozen realm (a client reset's `before` copy) refuses writes.
    public let isFrozen: Bool

    /// Opens the realm `configuration` describes (the seeds'
    /// `Realm(configuration:downloadBeforeOpen:)`).
    ///
    /// - Parameters:
    ///   - openBehavior: whether to reach the backend first; the default,
    ///     ``OpenBehavior/never``, opens at once, offline or not.
    ///   - timeout: how long ``OpenBehavior/always`` may take to reach the backend.
    ///   - logger: where the realm, its queue and its upload log. The
    ///     default, `Logger(label: "edgeingest")`, follows the application's
    ///     `LoggingSystem.bootstrap`; routine events are at `debug`.
    /// - Throws: ``EdgeIngestError``: ``EdgeIngestError/Code/invalidConfiguration``
    ///   (both `fileURL` and `inMemoryIdentifier`, no object types, …), the
    ///   queue's open errors, ``EdgeIngestError/Code/offline`` when
    ///   ``OpenBehavior/always`` cannot reach the backend in time,
    ///   ``EdgeIngestError/Code/authenticationFailed`` when it refuses the session.
    public convenience init(
        configuration: IngestConfiguration = .defaultConfiguration,
        openBehavior: OpenBehavior = .never,
        timeout: Duration = .seconds(30),
        logger: Logger = Logger(label: "edgeingest")
    ) async throws {
        let queue = try DurableQueue.open(configuration.queueConfiguration(), logger: logger)
        var mustConnect = openBehavior == .always
        if openBehavior == .once { mustConnect = try queue.meta("opened_online") == nil }
        if mustConnect {
            guard let user = configuration.user else {
                throw EdgeIngestError(
                    .invalidConfiguration,
                    "Opening with .\(openBehavior) needs a user to reach the backend: use user.configuration(), or open with .never."
                )
            }
            try await user.reachBackend(timeout: timeout)
            try queue.setMeta("opened_online", 1)
        }
        try self.init(assembling: queue, configuration: configuration, logger: logger)
    }

    /// Opens at once, without reaching the backend (``OpenBehavior/never``),
    /// for callers that cannot suspend (the Realm-shaped `Realm(configuration:)`).
    package convenience init(openingNow configuration: IngestConfiguration, logger: Logger) throws {
        let queue = try DurableQueue.open(configuration.queueConfiguration(), logger: logger)
        try self.init(assembling: queue, configuration: configuration, logger: logger)
    }

    /// The realm on an open queue: with a user, its client-reset handler
    /// and the queue's background upload (shared by every realm on it).
    private convenience init(assembling queue: DurableQueue, configuration: IngestConfiguration, logger: Logger) throws
    {
        guard let user = configuration.user else {
            self.init(opened: queue, configuration: configuration)
            return
        }
        // One upload per file in the process, and with it one client-reset
        // handler: every realm on the file resolves resets through it (its
        // mode is that of the first realm opened on the file).
        var made: ClientResetHandler?
        let upload = try BackgroundUpload.shared(for: queue) {
            let handler = try ClientResetHandler(queue: queue, configuration: configuration, logger: logger)
            made = handler
            let activity = UploadActivity(queue: queue, user: user)
            return BackgroundUpload(
                uploader: IngestRealm.makeUploader(
                    queue: queue,
                    configuration: configuration,
                    user: user,
                    handler: handler,
                    activity: activity,
                    logger: logger
                ),
                user: user,
                resetHandler: handler,
                activity: activity
            )
        }
        if made == nil, upload.resetHandler.configuration.clientResetMode.kind != configuration.clientResetMode.kind {
            logger.warning(
                "This file is already open with another client-reset mode; the first realm's mode applies",
                metadata: [
                    "ingest.mode": "\(upload.resetHandler.configuration.clientResetMode)",
                    "ingest.ignored_mode": "\(configuration.clientResetMode)",
                ]
            )
        }
        self.init(opened: queue, configuration: configuration, upload: upload, resetHandler: upload.resetHandler)
    }

    init(
        opened queue: DurableQueue,
        configuration: IngestConfiguration,
        upload: BackgroundUpload? = nil,
        resetHandler: ClientResetHandler? = nil,
        frozen: Bool = false
    ) {
        self.queue = queue
        self.configuration = configuration
        self.upload = upload
        self.resetHandler = resetHandler
        self.isFrozen = frozen
    }

    private static func makeUploader(
        queue: DurableQueue,
        configuration: IngestConfiguration,
        user: User,
        handler: ClientResetHandler,
        activity: UploadActivity,
        logger: Logger
    ) -> Uploader {
        var http = user.app.configuration.http
        http.url = user.app.ingestURL
        http.gzip = configuration.upload.gzip
        var settings = UploadSettings(http: http, clientID: configuration.upload.clientID)
        settings.maxRecords = configuration.upload.maxRecords
        settings.maxBytes = configuration.upload.maxBytes
        settings.lingerMilliseconds = configuration.upload.lingerMilliseconds
        settings.backoff = configuration.upload.backoff
        settings.shutdownTimeoutMilliseconds = configuration.upload.closeTimeoutMilliseconds
        settings.routineLogLevel = .debug  // an application's realm is quiet unless asked
        var hooks = UploadHooks()
        hooks.requestHeaders = { [user, handler] in
            [("Authorization", "Bearer " + (try user.accessToken())), ("EdgeIngest-Session", handler.session)]
        }
        hooks.refreshCredentials = { [user] in (try? user.accessToken(forceRefresh: true)) != nil }
        hooks.clientReset = { [handler] reason, recoverable, stored in
            handler.handle(reason: reason, recoverable: recoverable, storedSinceLastReset: stored)
        }
        hooks.reportError = { [user] error in SyncManager.errorHandler?(error, user) }
        hooks.acknowledge = { [activity] lease, deadLetters, commit in
            try activity.acknowledge(lease, deadLetters: deadLetters, commit: commit)
        }
        return Uploader(
            queue: queue,
            settings: settings,
            state: UploadState(),
            hooks: hooks,
            userAgent: "EdgeIngest/\(EdgeIngestVersion.current)",
            logger: logger
        )
    }

    /// Creates records in one transaction: all are stored when this
    /// returns, or none if `block` or the queue throws. Blocks the calling
    /// thread while a full queue under ``OverflowPolicy/block`` waits for
    /// the upload to free space; from async code prefer ``asyncWrite(_:)``.
    @discardableResult
    public func write<Result>(_ block: (IngestTransaction) throws -> Result) throws -> Result {
        let (transaction, result) = try prepare(block)
        if !transaction.records.isEmpty {
            let claimed = try claimIDs(of: transaction.records)
            do {
                // Records an overflow policy refused were never stored: their ids stay free.
                if try queue.appendBlocking(transaction.records).droppedIncoming > 0 { claimed.forget() }
            } catch {
                claimed.forget()
                throw error
            }
            upload?.wake.wake()
        }
        return result
    }

    /// ``write(_:)`` for async code: a full queue suspends the task instead
    /// of blocking a thread (the seeds' `asyncWrite`).
    @discardableResult
    public func asyncWrite<Result>(_ block: (IngestTransaction) throws -> Result) async throws -> Result {
        let (transaction, result) = try prepare(block)
        if !transaction.records.isEmpty {
            let claimed = try claimIDs(of: transaction.records)
            do {
                // Records an overflow policy refused were never stored: their ids stay free.
                if try await queue.append(transaction.records).droppedIncoming > 0 { claimed.forget() }
            } catch {
                claimed.forget()
                throw error
            }
            upload?.wake.wake()
        }
        return result
    }

    private func prepare<Result>(_ block: (IngestTransaction) throws -> Result) throws -> (IngestTransaction, Result) {
        guard !isFrozen else {
            throw EdgeIngestError(
                .invalidConfiguration,
                "This realm is a frozen copy (a client reset's 'before'): it cannot be written to."
            )
        }
        let transaction = IngestTransaction(types: queue.typesByName)
        let result = try block(transaction)
        return (transaction, result)
    }

    /// Counts: pending records and bytes, totals appended and uploaded,
    /// dropped by reason (`client_reset`, overflow), dead letters.
    public func statistics() throws -> QueueStatistics { try queue.statistics() }

    /// The background upload's state (uploading, idle, backing_off,
    /// waiting_for_user, client_reset, error), or nil for a local realm.
    public var uploadState: UploadState.Snapshot? { upload?.uploader.state.snapshot }

    /// Writes a copy of the pending records to the realm `configuration`
    /// describes (created if needed; records already there are kept): the
    /// seeds' `writeCopy(configuration:)`. `_id`s are preserved, so a
    /// deduplicating backend stores each record once whichever copy
    /// uploads it. Only between configurations of the same kind (both
    /// with a user, or both local); the copy does not upload by itself
    /// until opened.
    ///
    /// - Returns: the number of records copied.
    @discardableResult
    public func writeCopy(configuration target: IngestConfiguration) throws -> Int64 {
        guard target.isSameKind(as: configuration) || isFrozen else {
            throw EdgeIngestError(
                .invalidConfiguration,
                "writeCopy copies between configurations of the same kind: both with a user or both local (this one \(configuration.user == nil ? "is local" : "has a user"))."
            )
        }
        let queue = try DurableQueue.open(target.queueConfiguration(), logger: self.queue.logger)
        return try self.queue.copyPending(into: queue)
    }

    /// Resolves a client reset left to the application
    /// (``ClientResetMode/manual(errorHandler:)`` or a failed recovery):
    /// re-upload the pending records under a new session, or discard them
    /// (counted as dropped, reason `client_reset`) after copying them into
    /// `backup` when given. Uploading resumes at once.
    public func resolveClientReset(discard: Bool, backup: IngestConfiguration? = nil) throws {
        guard let resetHandler else {
            throw EdgeIngestError(
                .invalidConfiguration,
                "This realm has no user, so there is no client reset to resolve."
            )
        }
        let backupRealm = try backup.map {
            IngestRealm(opened: try DurableQueue.open($0.queueConfiguration(), logger: queue.logger), configuration: $0)
        }
        try resetHandler.resolve(discard: discard, backup: backupRealm)
    }

    /// The reason of a client reset waiting for ``resolveClientReset(discard:backup:)``, if any.
    public var pendingClientReset: String? { resetHandler?.pendingReason }

    public var description: String { "IngestRealm(\(queue.configuration.location))" }

    /// The same for every realm on one file (or in-memory queue) in the process.
    package var queueIdentity: ObjectIdentifier { ObjectIdentifier(queue) }
}

extension User {
    /// Reaches the backend by refreshing the session, within `timeout`.
    func reachBackend(timeout: Duration) async throws {
        let milliseconds = Int(
            timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000
        )
        try await BlockingThread.value { [self] in
            _ = try accessToken(forceRefresh: true, timeoutMilliseconds: max(1, milliseconds))
        }
    }
}
