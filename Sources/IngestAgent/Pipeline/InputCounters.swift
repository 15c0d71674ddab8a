import EdgeIngestCore

/// Live counters of one input, shared between its reader thread and the
/// status writer.
package final class InputCounters: Sendable {
    package struct Snapshot: Sendable, Codable, Hashable {
        package var name: String
        package var kind: String
        package var linesRead: Int64 = 0
        package var accepted: Int64 = 0
        package var rejected: Int64 = 0
        package var rejectedByReason: [String: Int64] = [:]
        /// The committed position, for inputs with one stream.
        package var position: String?
        /// File inputs: each followed file's committed byte offset, by path.
        package var files: [String: Int64]?
        /// The last sign of life, ms on the monotonic clock (a wall-clock
        /// jump must not make a live input look wedged, or hide a wedged one).
        package var heartbeatAt: Int64 = 0
        /// A commit of this input is in flight: the input waits for the
        /// queue (for space under backpressure, for disk space, or for the
        /// write itself), which the watchdog does not count as wedged.
        package var waitingForSpace = false
        package var finished = false
        /// Set while a device input cannot open its device.
        package var disconnected = false
        /// Why the input cannot make progress right now (e.g. the disk is full).
        package var problem: String?
        /// HTTP inputs: the address listened on.
        package var listen: String?
        /// HTTP inputs: received records not stored again because their
        /// `_id` was received before (a client re-sent a batch).
        package var duplicates: Int64?
        /// HTTP inputs with a quota: batches answered 429 because their
        /// account sent more than its quota.
        package var throttledBatches: Int64?
        /// HTTP inputs with TLS: when the server certificate expires (ISO 8601).
        package var tlsCertificateExpiresAt: String?
    }

    private let state: PlainMutex<Snapshot>

    package init(name: String, kind: String) {
        state = PlainMutex(Snapshot(name: name, kind: kind, heartbeatAt: monotonicMilliseconds()))
    }

    package var snapshot: Snapshot { state.withLock { $0 } }

    func update(_ body: (inout Snapshot) -> Void) {
        state.withLock { body(&$0) }
    }

    func heartbeat() {
        let now = monotonicMilliseconds()
        state.withLock { $0.heartbeatAt = now }
    }
}
