import EdgeIngest

/// Realm's error reporting block: an upload error and the session it
/// happened in (nil when it is not known).
public typealias ErrorReportingBlock = @Sendable (_ error: Error, _ session: SyncSession?) -> Void

/// Realm's `SyncManager` (`app.syncManager`): where upload errors go.
///
/// ```swift
/// app.syncManager.errorHandler = { error, session in
///     print("upload error: \(error.localizedDescription)")
/// }
/// ```
///
/// The handler is process-wide (EdgeIngest's ``EdgeIngestCore/SyncManager/errorHandler``),
/// whichever app it was set through.
public struct SyncManager: Sendable {
    /// Receives every upload error that is not a client reset handled by
    /// its mode (see ``EdgeIngestCore/SyncManager/errorHandler``). Its
    /// session carries the user; it cannot resolve a client reset (use
    /// the realm's ``Realm/resolveClientReset(discard:backup:)``).
    public var errorHandler: ErrorReportingBlock? {
        get { SyncManager.handler.withLock { $0 } }
        nonmutating set {
            SyncManager.handler.withLock { $0 = newValue }
            guard let block = newValue else {
                EdgeIngestCore.SyncManager.errorHandler = nil
                return
            }
            EdgeIngestCore.SyncManager.errorHandler = { @Sendable (error: EdgeIngestError, user: User?) in
                block(realmError(error), user.map { SyncSession(user: $0) })
            }
        }
    }

    private static let handler = PlainMutex<ErrorReportingBlock?>(nil)
}

/// Realm's `SyncSession`: the upload session of a realm (or of a user, in
/// an error handler).
public final class SyncSession: Sendable {
    private let user: User?
    private let realm: IngestRealm?

    init(realm: IngestRealm) {
        self.realm = realm
        self.user = realm.configuration.user
    }

    init(user: User) {
        self.realm = nil
        self.user = user
    }

    /// The user whose session this is.
    public func parentUser() -> User? { user }

    /// The upload's state: `uploading`, `idle`, `backing_off`,
    /// `waiting_for_user`, `client_reset` or `error` (nil in an error
    /// handler called without a realm).
    public var state: String? { realm?.uploadState.map { "\($0.state)" } }

    /// Resolves a client reset left to the application: see
    /// ``IngestRealm/resolveClientReset(discard:backup:)``.
    ///
    /// - Throws: ``EdgeIngestError/Code/invalidConfiguration`` for a
    ///   session that came without its realm (the ``SyncManager`` handler).
    public func resolveClientReset(discard: Bool, backup: Realm.Configuration? = nil) throws {
        guard let realm else {
            throw Realm.Error(
                EdgeIngestError(
                    .invalidConfiguration,
                    "This session came without its realm: resolve the client reset with realm.resolveClientReset(discard:)."
                )
            )
        }
        try reportingRealmErrors { try realm.resolveClientReset(discard: discard, backup: backup?.resolved) }
    }
}
