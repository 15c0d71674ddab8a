/// How far the upload of a realm has come, for a progress bar or a log
/// line: bytes and records as the queue stores them (NDJSON, before any
/// gzip on the wire). See ``IngestRealm/observeUploadProgress(_:_:)``.
///
/// ```swift
/// let token = try realm.observeUploadProgress(.currentlyOutstanding) { progress in
///     print("\(Int(progress.estimate * 100)) % uploaded")
/// }
/// ```
public struct UploadProgress: Sendable, Hashable {
    /// Bytes of records confirmed by the backend (or dead-lettered) so far.
    public var transferredBytes: Int64
    /// ``transferredBytes`` plus the bytes still waiting.
    public var transferrableBytes: Int64
    /// Records confirmed (or dead-lettered) so far.
    public var transferredRecords: Int64
    /// ``transferredRecords`` plus the records still waiting.
    public var transferrableRecords: Int64

    /// From 0 to 1: the share of the bytes that left the device (1 when
    /// nothing is waiting).
    public var estimate: Double {
        transferrableBytes <= 0 ? 1 : min(1, Double(transferredBytes) / Double(transferrableBytes))
    }

    /// Whether nothing is waiting any more.
    public var isComplete: Bool { transferredBytes >= transferrableBytes && transferredRecords >= transferrableRecords }

    public init(
        transferredBytes: Int64,
        transferrableBytes: Int64,
        transferredRecords: Int64,
        transferrableRecords: Int64
    ) {
        self.transferredBytes = transferredBytes
        self.transferrableBytes = transferrableBytes
        self.transferredRecords = transferredRecords
        self.transferrableRecords = transferrableRecords
    }

    /// What an observer follows.
    public enum Scope: Sendable, Hashable {
        /// The records waiting when the observer was added: the observer is
        /// told until they all left, then removed (Realm's
        /// `.forCurrentlyOutstandingWork`).
        case currentlyOutstanding
        /// Everything, for as long as the observer is kept: what left since
        /// it was added, out of that plus what waits now (Realm's
        /// `.reportIndefinitely`).
        case indefinitely
    }
}

/// Keeps an upload-progress observer registered: ``cancel()`` (or
/// releasing the token's realm) stops the calls.
public final class UploadProgressToken: Sendable {
    private let cancelAction: @Sendable () -> Void

    init(cancel: @escaping @Sendable () -> Void) { cancelAction = cancel }

    /// Stops the observer's calls; calling it again does nothing.
    public func cancel() { cancelAction() }
}
