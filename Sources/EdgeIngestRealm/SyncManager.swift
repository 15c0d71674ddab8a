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
