/// Whether opening waits for the backend: the seeds' `downloadBeforeOpen`
/// for a write-only queue, where "download" means "log in or refresh the
/// session and reach the backend".
///
/// ```swift
/// let realm = try await IngestRealm(configuration: configuration, openBehavior: .once, timeout: .seconds(10))
/// ```
public struct OpenBehavior: Hashable, Sendable, CustomStringConvertible {
    enum Kind: String { case never, always, once }
    let kind: Kind

    /// Open at once, online or offline; uploading starts in the background
    /// when the backend is reachable. The default.
    public static let never = OpenBehavior(kind: .never)
    /// Reach the backend (refresh the session) before opening; fail with
    /// ``EdgeIngestError/Code/offline`` after the timeout when offline.
    public static let always = OpenBehavior(kind: .always)
    /// Like ``always`` the first time a given file is opened, like ``never``
    /// afterwards (the file remembers that it was opened online once).
    public static let once = OpenBehavior(kind: .once)

    public var description: String { kind.rawValue }
}

/// The seeds' AsyncOpen states, as ``IngestRealm/asyncOpen(configuration:openBehavior:timeout:)``
/// reports them and `ingestd status` shows them.
public enum AsyncOpenState: Sendable {
    /// Reaching the backend (``OpenBehavior/always``, or the first ``OpenBehavior/once``).
    case connecting
    /// No usable session: the user logged out or the backend refused to
    /// refresh it. Log in again; the open then succeeds.
    case waitingForUser
    /// The records queued at open being uploaded before the realm opens
    /// (``OpenBehavior/always``, or the first ``OpenBehavior/once``, when
    /// records were queued): the fraction of them the backend confirmed,
    /// from 0 to 1.
    case progress(Double)
    /// Open and ready for writes.
    case open(IngestRealm)
    /// Opening failed; the error says why.
    case error(EdgeIngestError)
}
