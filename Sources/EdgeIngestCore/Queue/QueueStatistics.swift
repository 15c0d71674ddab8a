/// A snapshot of a queue's contents and counters. Counters survive restarts.
public struct QueueStatistics: Sendable, Hashable {
    /// Records waiting to be uploaded.
    public var queuedRecords: Int64
    /// Bytes of encoded records waiting to be uploaded.
    public var queuedBytes: Int64
    /// When the oldest waiting record was appended (ms since the epoch).
    public var oldestEnqueuedAt: Int64?
    /// Records ever appended (accepted into the queue).
    public var appendedTotal: Int64
    /// Records ever acknowledged by the backend and deleted.
    public var acknowledgedTotal: Int64
    /// Records refused by the backend one by one, kept in the dead-letter table.
    public var deadLetterRecords: Int64 = 0
    /// Records in damaged segments or dead letters, moved to the quarantine
    /// table instead of being sent (docs/QUEUE.md "Integrity").
    public var quarantinedRecords: Int64 = 0
    /// Records that left the queue without acknowledgement, by reason name.
    public var droppedByReason: [String: Int64]
    /// Bytes the queue file and its WAL take on disk (0 in memory).
    public var fileBytes: Int64
    /// Application counters added with ``DurableQueue/append(_:positions:counters:)``.
    public var counters: [String: Int64] = [:]
    /// When a repair last deleted damaged rows of a gateway's received ids
    /// or sessions (ms since the epoch): a batch received before then and
    /// sent again within the deduplication window may be stored twice.
    public var gatewayMemoryForgottenAt: Int64?
    /// How long the oldest waiting record has been queued (ms), on clocks
    /// a box without a real-time clock can trust: the boot-time clock
    /// within the boot that accepted it, else its corrected acceptance
    /// time against the wall clock; nil when the queue is empty or no
    /// clock can tell (accepted in an earlier boot that never learnt the
    /// time). Unlike ``oldestEnqueuedAt``, a wall-clock jump leaves it true.
    public var oldestAgeMilliseconds: Int64?

    /// Statistics of an empty queue with no history.
    public static let empty = QueueStatistics(
        queuedRecords: 0,
        queuedBytes: 0,
        oldestEnqueuedAt: nil,
        appendedTotal: 0,
        acknowledgedTotal: 0,
        droppedByReason: [:],
        fileBytes: 0
    )

    /// All dropped records.
    public var droppedTotal: Int64 { droppedByReason.values.reduce(0, +) }
}

/// An input's position (a file offset, say), committed in the same
/// transaction as the records read up to it, so a restart resumes exactly.
public struct SourcePosition: Sendable, Hashable {
    /// The input's stable name, e.g. `file:/var/log/sensors.ndjson`.
    public var source: String
    /// Opaque to the queue: whatever the input needs to resume.
    public var position: String

    public init(source: String, position: String) {
        self.source = source
        self.position = position
    }
}

/// What an append did.
public struct AppendResult: Sendable, Hashable {
    /// Records stored.
    public var accepted: Int
    /// Incoming records refused by the overflow policy.
    public var droppedIncoming: Int
    /// Previously stored records deleted by ``OverflowPolicy/dropOldest``.
    public var droppedStored: Int64
    /// Received records not stored because their `_id` was received before
    /// (only records received over HTTP are checked).
    public var duplicates: Int = 0
    /// Received records not stored because their `_id` was received before
    /// with other content (a conflict, not a re-send): their indices in the
    /// batch as given, ascending. The sender is told `duplicate_id`.
    public var conflicts: [Int] = []
}
