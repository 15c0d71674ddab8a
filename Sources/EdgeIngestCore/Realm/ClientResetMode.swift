/// What an ``IngestRealm`` does when the backend demands a client reset
/// (409/410: it lost this client's session, or a breaking schema change):
/// the seeds' `ClientResetMode`, for a write-only queue.
///
/// The `before` hook receives a frozen copy of the pending records (an
/// in-memory realm; back it up with ``IngestRealm/writeCopy(configuration:)``);
/// `after` receives that copy and the live realm after the reset.
///
/// ```swift
/// var configuration = user.configuration(clientResetMode: .discardUnsyncedChanges({ before in
///     var recovery = IngestConfiguration()
///     recovery.fileURL = URL(fileURLWithPath: "/var/backups/recovered.ingest.sqlite")
///     recovery.objectTypes = [WeatherSensor.self]
///     try? before.writeCopy(configuration: recovery)
/// }, nil))
/// ```
public struct ClientResetMode: Sendable, CustomStringConvertible {
    enum Kind: String {
        case discard = "discard"
        case recover = "recover"
        case recoverOrDiscard = "recover_or_discard"
        case manual = "manual"
    }
    let kind: Kind
    let beforeReset: (@Sendable (_ before: IngestRealm) -> Void)?
    let afterReset: (@Sendable (_ before: IngestRealm, _ after: IngestRealm) -> Void)?
    let errorHandler: (@Sendable (_ error: EdgeIngestError, _ realm: IngestRealm) -> Void)?

    /// Discard the pending records (after `before` saw a frozen copy) and
    /// resume uploading under a new session. Discarded records are counted
    /// as dropped with reason `client_reset`.
    public static func discardUnsyncedChanges(
        _ beforeReset: (@Sendable (_ before: IngestRealm) -> Void)? = nil,
        _ afterReset: (@Sendable (_ before: IngestRealm, _ after: IngestRealm) -> Void)? = nil
    ) -> ClientResetMode {
        ClientResetMode(kind: .discard, beforeReset: beforeReset, afterReset: afterReset, errorHandler: nil)
    }

    /// Re-upload the pending records under a new session (their `_id`s make
    /// this safe with a deduplicating backend). When the backend says that
    /// cannot succeed (`"recoverable": false`), fall back to ``manual(errorHandler:)``
    /// with the process-wide ``SyncManager/errorHandler``. The default mode.
    public static func recoverUnsyncedChanges(
        _ beforeReset: (@Sendable (_ before: IngestRealm) -> Void)? = nil,
        _ afterReset: (@Sendable (_ before: IngestRealm, _ after: IngestRealm) -> Void)? = nil
    ) -> ClientResetMode {
        ClientResetMode(kind: .recover, beforeReset: beforeReset, afterReset: afterReset, errorHandler: nil)
    }

    /// Recover as ``recoverUnsyncedChanges(_:_:)``; when the backend says
    /// that cannot succeed, discard as ``discardUnsyncedChanges(_:_:)``.
    public static func recoverOrDiscardUnsyncedChanges(
        _ beforeReset: (@Sendable (_ before: IngestRealm) -> Void)? = nil,
        _ afterReset: (@Sendable (_ before: IngestRealm, _ after: IngestRealm) -> Void)? = nil
    ) -> ClientResetMode {
        ClientResetMode(kind: .recoverOrDiscard, beforeReset: beforeReset, afterReset: afterReset, errorHandler: nil)
    }

    /// Stop uploading and keep everything; `errorHandler` is called with an
    /// ``EdgeIngestError/Code/clientResetRequired`` error and the realm,
    /// which resumes after ``IngestRealm/resolveClientReset(discard:)``.
    public static func manual(
        errorHandler: (@Sendable (_ error: EdgeIngestError, _ realm: IngestRealm) -> Void)? = nil
    ) -> ClientResetMode {
        ClientResetMode(kind: .manual, beforeReset: nil, afterReset: nil, errorHandler: errorHandler)
    }

    /// `discard`, `recover`, `recover_or_discard` or `manual`.
    public var description: String { kind.rawValue }
}

/// Process-wide handling of upload errors: the seeds' `SyncManager`.
///
/// ```swift
/// SyncManager.errorHandler = { error, user in
///     logger.error("upload: \(error.code)", metadata: ["user": "\(user?.id ?? "-")"])
/// }
/// ```
public enum SyncManager {
    private static let handler = PlainMutex<(@Sendable (_ error: EdgeIngestError, _ user: User?) -> Void)?>(nil)

    /// Receives every upload error that is not a client reset handled by
    /// its mode: failures that are being retried (once per streak),
    /// holds (403, 404, …), refused sessions, and client resets left to
    /// the application. Called on the uploader's thread; keep it short.
    public static var errorHandler: (@Sendable (_ error: EdgeIngestError, _ user: User?) -> Void)? {
        get { handler.withLock { $0 } }
        set { handler.withLock { $0 = newValue } }
    }
}
