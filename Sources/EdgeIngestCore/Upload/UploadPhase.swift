/// What the uploader is doing, as ``UploadState/Snapshot/state`` reports it.
///
/// A struct over a private enum, so a phase added later does not break a
/// `switch` in an app (ServiceLifecycle's `TerminationBehavior` does the
/// same). Compare with the static members:
///
/// ```swift
/// if realm.uploadState?.state == .waitingForUser {
///     // ask the user to log in again
/// }
/// ```
public struct UploadPhase: Sendable, Hashable, CustomStringConvertible {
    private enum Kind: String, Sendable {
        case idle, uploading
        case backingOff = "backing_off"
        case error
        case waitingForUser = "waiting_for_user"
        case clientReset = "client_reset"
    }

    private let kind: Kind

    private init(_ kind: Kind) { self.kind = kind }

    /// Nothing is queued, or the uploader waits for a partial batch to fill.
    public static let idle = UploadPhase(.idle)
    /// A batch is on its way to the backend.
    public static let uploading = UploadPhase(.uploading)
    /// A batch failed for a passing reason and is sent again after a backoff
    /// (``UploadState/Snapshot/until`` says when).
    public static let backingOff = UploadPhase(.backingOff)
    /// Held on a configuration problem (403, 404, a sink's own refusal):
    /// everything stays queued until it is fixed or the hold time passes.
    public static let error = UploadPhase(.error)
    /// The credentials were refused or are missing: held until the user
    /// logs in again.
    public static let waitingForUser = UploadPhase(.waitingForUser)
    /// The backend demanded a client reset and the configured mode is
    /// deciding (brief: it ends in a fresh upload or in ``error``).
    public static let clientReset = UploadPhase(.clientReset)

    /// The name status.json and `ingestd status` show: `idle`, `uploading`,
    /// `backing_off`, `error`, `waiting_for_user` or `client_reset`.
    public var name: String { kind.rawValue }

    public var description: String { name }

    /// Whether uploading stopped until something outside the uploader
    /// changes: a hold (``error``) or a wait for the user.
    public var isHeld: Bool { self == .error || self == .waitingForUser }
}
