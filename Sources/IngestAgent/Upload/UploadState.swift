import Synchronization

/// The uploader's observable state, read by the status service: the seeds'
/// AsyncOpen states as the agent reports them.
public final class UploadState: Sendable {
    public struct Snapshot: Sendable, Hashable {
        /// uploading, idle, backing_off or error.
        public var state = "idle"
        public var reason: String?
        /// backing_off: when the next attempt is due (ms since the epoch).
        public var until: Int64?
        public var lastUploadAt: String?
        public var lastOutcome: String?
        public var requests: Int64 = 0
        /// Batches sent again after a failure (each re-send carries the same `_id`s).
        public var resends: Int64 = 0
    }

    private let state = Mutex(Snapshot())

    public init() {}

    public var snapshot: Snapshot { state.withLock { $0 } }

    func update(_ body: (inout Snapshot) -> Void) { state.withLock { body(&$0) } }
}
