import EdgeIngestCore
import Synchronization

/// Live counters of one input, shared between its reader thread and the
/// status writer.
public final class InputCounters: Sendable {
    public struct Snapshot: Sendable, Codable, Hashable {
        public var name: String
        public var kind: String
        public var linesRead: Int64 = 0
        public var accepted: Int64 = 0
        public var rejected: Int64 = 0
        public var rejectedByReason: [String: Int64] = [:]
        /// The committed position, for inputs with one stream.
        public var position: String?
        /// File inputs: each followed file's committed byte offset, by path.
        public var files: [String: Int64]?
        /// Milliseconds since the epoch of the last sign of life.
        public var heartbeatAt: Int64 = 0
        /// A commit of this input is in flight: the input waits for the
        /// queue (for space under backpressure, for disk space, or for the
        /// write itself), which the watchdog does not count as wedged.
        public var waitingForSpace = false
        public var finished = false
        /// Set while a device input cannot open its device.
        public var disconnected = false
        /// Why the input cannot make progress right now (e.g. the disk is full).
        public var problem: String?
        /// HTTP inputs: the address listened on.
        public var listen: String?
        /// HTTP inputs: received records not stored again because their
        /// `_id` was received before (a client re-sent a batch).
        public var duplicates: Int64?
        /// HTTP inputs with a quota: batches answered 429 because their
        /// account sent more than its quota.
        public var throttledBatches: Int64?
        /// HTTP inputs with TLS: when the server certificate expires (ISO 8601).
        public var tlsCertificateExpiresAt: String?
    }

    private let state: Mutex<Snapshot>

    public init(name: String, kind: String) {
        state = Mutex(Snapshot(name: name, kind: kind, heartbeatAt: wallClockMilliseconds()))
    }

    public var snapshot: Snapshot { state.withLock { $0 } }

    func update(_ body: (inout Snapshot) -> Void) {
        state.withLock { body(&$0) }
    }

    func heartbeat() {
        let now = wallClockMilliseconds()
        state.withLock { $0.heartbeatAt = now }
    }
}
