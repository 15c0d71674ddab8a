/// The uploader's observable state, read by the status service: the seeds'
/// AsyncOpen states as the agent reports them.
public final class UploadState: Sendable {
    /// Readings the final drain could not deliver, and why.
    public struct LeftQueued: Sendable, Hashable {
        public var records: Int64
        public var reason: String
    }

    public struct Snapshot: Sendable, Hashable {
        /// What the uploader is doing.
        public var state = UploadPhase.idle
        public var reason: String?
        /// backing_off: when the next attempt is due (ms since the epoch).
        public var until: Int64?
        public var lastUploadAt: String?
        public var lastOutcome: String?
        /// Set by the final drain at shutdown when readings are still queued.
        public var leftAtStop: LeftQueued?
        public var requests: Int64 = 0
        /// Batches sent again after a failure (each re-send carries the same `_id`s).
        public var resends: Int64 = 0
        /// Records the backend already had and dropped by its own
        /// deduplication (a JetStream PubAck that says `duplicate`).
        public var duplicatesDropped: Int64 = 0
        /// Records re-sent later than the backend's deduplication window
        /// (JetStream's duplicate window): they may be stored twice.
        public var potentialDuplicates: Int64 = 0
        /// How long the sink took to answer each request.
        public var latency = UploadLatency()
        /// Whether a batch was stored by the backend since the start.
        public var connected = false
        /// When the uploader promised its next sign of life (ms on the
        /// monotonic clock, which no wall-clock jump moves): before each wait, request or queue call it sets this to
        /// the longest that step may take. Past it, the uploader is wedged
        /// and the watchdog ping is withheld.
        public var aliveUntil: Int64 = .max
    }

    private let state = PlainMutex(Snapshot())

    public init() {}

    public var snapshot: Snapshot { state.withLock { $0 } }

    package func update(_ body: (inout Snapshot) -> Void) { state.withLock { body(&$0) } }

    /// Grace added to every promise: scheduling, a slow fsync, a GC-free but busy machine.
    package static let graceMilliseconds: Int64 = 10_000

    /// Promises the next sign of life within `milliseconds` (plus grace).
    package func expectProgress(within milliseconds: Int) {
        let until = monotonicMilliseconds() + Int64(milliseconds) + UploadState.graceMilliseconds
        state.withLock { $0.aliveUntil = until }
    }
}
