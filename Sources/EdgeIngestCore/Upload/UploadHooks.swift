/// What the uploader asks of its owner: per-request credentials, a refresh
/// after a 401, a decision on a client reset, and where to report errors.
/// The agent and ``IngestRealm`` each fill it in; the defaults send no
/// credentials and hold on a reset.
package struct UploadHooks: Sendable {
    /// Headers added to every batch (`Authorization`, `EdgeIngest-Session`).
    /// May refresh an expired token (blocking). Throwing means no usable
    /// credentials: the uploader holds in `waiting_for_user` until resumed.
    package var requestHeaders: @Sendable () throws -> [(String, String)] = { [] }
    /// Called once after a 401: refresh the credentials. True when new ones
    /// are in place and the batch may be sent again.
    package var refreshCredentials: @Sendable () -> Bool = { false }
    /// Called when the backend demands a client reset. `storedSinceLastReset`
    /// says whether any batch was stored since the previous demand (false
    /// right after a recovery means the new session is refused too).
    /// Returns true when the reset was carried out and uploading may resume
    /// at once, false to hold (manual mode) until ``Uploader/resume()``.
    package var clientReset: @Sendable (_ reason: String, _ recoverable: Bool, _ storedSinceLastReset: Bool) -> Bool = {
        _,
        _,
        _ in false
    }
    /// Receives errors that hold or slow uploading (the process-wide
    /// ``SyncManager/errorHandler``). Called once per streak, not per retry.
    package var reportError: @Sendable (EdgeIngestError) -> Void = { _ in }
    /// Runs `commit` (the lease's acknowledgement: its records deleted,
    /// those at the `deadLetters` indices moved to the dead-letter table
    /// with their reasons) and whatever must follow it before anyone can
    /// see the records gone: upload progress and the per-record refusals
    /// an app is told of (``UploadActivity``). The default only commits.
    package var acknowledge:
        @Sendable (_ lease: QueueLease, _ deadLetters: [Int: String], _ commit: () throws -> Void) throws -> Void = {
            _,
            _,
            commit in try commit()
        }

    package init() {}
}
