import Dispatch
import EdgeIngest

/// Realm's `SyncSession`: the upload session of a realm (or of a user, in
/// an error handler). A write-only realm only uploads: waits and progress
/// for `.download` complete at once.
///
/// ```swift
/// try realm.write { realm.create(WeatherSensor.self, value: reading) }
/// try await realm.syncSession?.wait(for: .upload)   // before a short-lived program exits
/// ```
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

    /// Realm's session states.
    public enum State: Sendable, Hashable {
        /// Uploading, or ready to upload what is written.
        case active
        /// Not uploading until something outside the upload changes: the
        /// user logged out or must log in again, a hold on the backend's
        /// refusal (403, 404) is to be lifted, or a client reset is left
        /// to the app.
        case inactive
        /// The upload stopped for good (the error handler was told why):
        /// nothing uploads through this session until the realm is opened
        /// again.
        case invalid
    }

    /// Realm's connection states.
    public enum ConnectionState: Sendable, Hashable {
        case disconnected, connecting, connected
    }

    /// The session's state.
    public var state: State {
        if realm?.uploadFailure != nil { return .invalid }
        guard let user, user.state == .loggedIn else { return .inactive }
        guard let realm else { return .active }
        if realm.pendingClientReset != nil || realm.uploadState?.state.isHeld == true { return .inactive }
        return .active
    }

    /// Whether the last batch reached the backend (`.connected`), one is on
    /// its way (`.connecting`), or neither; as in Realm, a session that is
    /// not `.active` is `.disconnected`.
    public var connectionState: ConnectionState {
        guard state == .active, let upload = realm?.uploadState else { return .disconnected }
        if upload.connected { return .connected }
        return upload.state == .uploading || upload.state == .backingOff ? .connecting : .disconnected
    }

    /// What the uploader is doing in EdgeIngest's words (`uploading`,
    /// `idle`, `backing_off`, `waiting_for_user`, `client_reset`, `error`),
    /// or nil in an error handler called without a realm.
    public var uploadPhase: UploadPhase? { realm?.uploadState?.state }

    /// Realm's transfer directions.
    public enum ProgressDirection: Sendable, Hashable {
        case upload, download
    }

    /// Realm's progress modes.
    public enum ProgressMode: Sendable, Hashable {
        /// Reports what was uploaded since the block was added, out of that
        /// plus what waits now, until the token is invalidated.
        case reportIndefinitely
        /// Reports how much of what waited when the block was added has
        /// left; a last call reports 1.0 and the block is removed.
        case forCurrentlyOutstandingWork
    }

    /// Realm's progress: bytes as the queue stores the records (NDJSON).
    public struct Progress: Sendable, Hashable {
        /// Bytes confirmed by the backend (or dead-lettered).
        public let transferredBytes: Int
        /// ``transferredBytes`` plus the bytes still waiting.
        public let transferrableBytes: Int
        /// From 0 to 1 (1 when nothing waits).
        public let progressEstimate: Double
        /// The same as ``progressEstimate``.
        public var fractionTransferred: Double { progressEstimate }
        /// Whether nothing waits any more.
        public var isTransferComplete: Bool { progressEstimate >= 1 }

        init(_ progress: UploadProgress) {
            transferredBytes = Int(progress.transferredBytes)
            transferrableBytes = Int(progress.transferrableBytes)
            progressEstimate = progress.isComplete ? 1 : progress.estimate
        }
    }

    /// Keeps a progress block registered until ``invalidate()``.
    public final class ProgressNotificationToken: Sendable {
        private let token: UploadProgressToken?
        init(_ token: UploadProgressToken?) { self.token = token }
        /// Stops the block's calls; calling it again does nothing.
        public func invalidate() { token?.cancel() }
    }

    /// Calls `block` with the upload's progress now and after every batch
    /// the backend confirmed (on the upload's thread: keep it short, or
    /// hop to your queue). For `.download` the block is called once with a
    /// finished transfer and nil is returned: a write-only realm downloads
    /// nothing. Nil too for a session without its realm.
    ///
    /// ```swift
    /// let token = realm.syncSession?.addProgressNotification(for: .upload, mode: .forCurrentlyOutstandingWork) {
    ///     print("uploaded \(Int($0.progressEstimate * 100)) %")
    /// }
    /// ```
    public func addProgressNotification(
        for direction: ProgressDirection,
        mode: ProgressMode,
        block: @escaping @Sendable (Progress) -> Void
    ) -> ProgressNotificationToken? {
        guard direction == .upload else {
            block(
                Progress(
                    UploadProgress(
                        transferredBytes: 0,
                        transferrableBytes: 0,
                        transferredRecords: 0,
                        transferrableRecords: 0
                    )
                )
            )
            return nil
        }
        guard let realm else { return nil }
        let scope: UploadProgress.Scope = mode == .reportIndefinitely ? .indefinitely : .currentlyOutstanding
        guard let token = try? realm.observeUploadProgress(scope, { block(Progress($0)) }) else { return nil }
        return ProgressNotificationToken(token)
    }

    /// Waits until every record written before the call left the device:
    /// confirmed by the backend, or refused by it and kept as a dead letter
    /// (each refusal also reaches `app.syncManager.errorHandler`). Records
    /// written meanwhile are not waited for. `.download` returns at once.
    ///
    /// Passing failures and holds (a 403 or 404: the error handler hears
    /// of them) do not end the wait, as in Realm.
    ///
    /// - Throws: ``Realm/Error`` when the wait cannot end: the user logged
    ///   out or must log in again (`authenticationFailed`), a client reset
    ///   waits for the app (`uploadHeld`),
    ///   the session came without its realm (`invalidConfiguration`);
    ///   `CancellationError` when the task is cancelled. The records stay
    ///   queued and upload later. No time limit: to bound the wait, use
    ///   `realm.ingestRealm.waitForUpload(timeout:)`.
    public func wait(for direction: ProgressDirection) async throws {
        guard direction == .upload else { return }
        guard let realm else {
            throw Realm.Error(
                EdgeIngestError(
                    .invalidConfiguration,
                    "This session came without its realm: wait with realm.syncSession?.wait(for: .upload)."
                )
            )
        }
        try await reportingRealmErrorsAsync { try await realm.waitForUpload(timeout: nil) }
    }

    /// ``wait(for:)`` with a callback, called on `queue` (a global queue
    /// when nil) with nil or the error.
    public func wait(
        for direction: ProgressDirection,
        queue: DispatchQueue? = nil,
        block: @escaping @Sendable (Error?) -> Void
    ) {
        Task {
            var failure: Error?
            do { try await wait(for: direction) } catch { failure = error }
            let result = failure
            (queue ?? DispatchQueue.global()).async { block(result) }
        }
    }

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
