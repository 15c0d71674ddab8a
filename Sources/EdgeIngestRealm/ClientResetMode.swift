import EdgeIngest

/// Realm's `ClientResetMode`, with the seeds' cases: what a realm does
/// when the backend demands a client reset (409/410). The blocks receive
/// ``Realm``s; each case maps onto EdgeIngest's mode of the same name
/// (docs/PROTOCOL.md "Client reset"), where `before` is a frozen in-memory
/// copy of the records that were pending and `after` the live realm.
///
/// ```swift
/// var config = user.flexibleSyncConfiguration(clientResetMode: .discardUnsyncedChanges(beforeReset: { before in
///     var recoveryConfig = Realm.Configuration()
///     recoveryConfig.fileURL = myRecoveryPath
///     try? before.writeCopy(configuration: recoveryConfig)
/// }))
/// ```
public enum ClientResetMode: Sendable {
    /// The old name of ``discardUnsyncedChanges(beforeReset:afterReset:)``.
    @available(*, deprecated, renamed: "discardUnsyncedChanges")
    case discardLocal(
        beforeReset: (@Sendable (_ before: Realm) -> Void)? = nil,
        afterReset: (@Sendable (_ before: Realm, _ after: Realm) -> Void)? = nil
    )
    /// Discard the pending records (counted as dropped, reason
    /// `client_reset`) after `beforeReset` saw them, and go on under a new session.
    case discardUnsyncedChanges(
        beforeReset: (@Sendable (_ before: Realm) -> Void)? = nil,
        afterReset: (@Sendable (_ before: Realm, _ after: Realm) -> Void)? = nil
    )
    /// Upload the pending records again under a new session (their `_id`s
    /// keep a deduplicating backend from storing any twice); when the
    /// backend says that cannot work, fall back to ``manual(errorHandler:)``.
    /// The default.
    case recoverUnsyncedChanges(
        beforeReset: (@Sendable (_ before: Realm) -> Void)? = nil,
        afterReset: (@Sendable (_ before: Realm, _ after: Realm) -> Void)? = nil
    )
    /// Recover when the backend says it can work, else discard.
    case recoverOrDiscardUnsyncedChanges(
        beforeReset: (@Sendable (_ before: Realm) -> Void)? = nil,
        afterReset: (@Sendable (_ before: Realm, _ after: Realm) -> Void)? = nil
    )
    /// Stop uploading and keep everything; `errorHandler` (else the
    /// ``SyncManager``'s) is called, and the app resolves it with
    /// ``Realm/resolveClientReset(discard:backup:)`` or ``SyncSession/resolveClientReset(discard:backup:)``.
    case manual(errorHandler: ErrorReportingBlock? = nil)
}

extension ClientResetMode {
    /// The seeds' unlabelled spelling: `.discardUnsyncedChanges({ before in … }, nil)`.
    public static func discardUnsyncedChanges(
        _ beforeReset: (@Sendable (_ before: Realm) -> Void)?,
        _ afterReset: (@Sendable (_ before: Realm, _ after: Realm) -> Void)?
    ) -> ClientResetMode { .discardUnsyncedChanges(beforeReset: beforeReset, afterReset: afterReset) }

    /// The seeds' unlabelled spelling of ``recoverUnsyncedChanges(beforeReset:afterReset:)``.
    public static func recoverUnsyncedChanges(
        _ beforeReset: (@Sendable (_ before: Realm) -> Void)?,
        _ afterReset: (@Sendable (_ before: Realm, _ after: Realm) -> Void)?
    ) -> ClientResetMode { .recoverUnsyncedChanges(beforeReset: beforeReset, afterReset: afterReset) }

    /// The seeds' unlabelled spelling of ``recoverOrDiscardUnsyncedChanges(beforeReset:afterReset:)``.
    public static func recoverOrDiscardUnsyncedChanges(
        _ beforeReset: (@Sendable (_ before: Realm) -> Void)?,
        _ afterReset: (@Sendable (_ before: Realm, _ after: Realm) -> Void)?
    ) -> ClientResetMode { .recoverOrDiscardUnsyncedChanges(beforeReset: beforeReset, afterReset: afterReset) }

    /// The primary API's mode, its blocks handed ``Realm``s.
    var ingestMode: EdgeIngestCore.ClientResetMode {
        // The realms handed to the blocks report this mode as theirs.
        let mode = self
        func wrap(_ before: (@Sendable (Realm) -> Void)?) -> (@Sendable (IngestRealm) -> Void)? {
            guard let before else { return nil }
            return { @Sendable (realm: IngestRealm) in before(Realm(realm, mode: mode)) }
        }
        func wrap(_ after: (@Sendable (Realm, Realm) -> Void)?) -> (@Sendable (IngestRealm, IngestRealm) -> Void)? {
            guard let after else { return nil }
            return { @Sendable (before: IngestRealm, live: IngestRealm) in
                after(Realm(before, mode: mode), Realm(live, mode: mode))
            }
        }
        switch self {
        case .discardLocal(let before, let after), .discardUnsyncedChanges(let before, let after):
            return .discardUnsyncedChanges(wrap(before), wrap(after))
        case .recoverUnsyncedChanges(let before, let after):
            return .recoverUnsyncedChanges(wrap(before), wrap(after))
        case .recoverOrDiscardUnsyncedChanges(let before, let after):
            return .recoverOrDiscardUnsyncedChanges(wrap(before), wrap(after))
        case .manual(let handler):
            guard let handler else { return .manual() }
            return .manual(errorHandler: { @Sendable (error: EdgeIngestError, realm: IngestRealm) in
                handler(Realm.Error(error), SyncSession(realm: realm))
            })
        }
    }
}
