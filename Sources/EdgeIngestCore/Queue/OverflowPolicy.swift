/// What a full queue does with records that do not fit its bound.
///
/// | policy | a batch that does not fit… | counted as |
/// | --- | --- | --- |
/// | ``block`` | waits until the uploader frees space (backpressure on the producer) | nothing is dropped |
/// | ``dropNewest`` | keeps what fits, drops the rest of the incoming batch | `overflow_drop_newest` |
/// | ``dropOldest`` | deletes the oldest stored batches (never one being uploaded) to make room | `overflow_drop_oldest` |
///
/// Every drop is counted persistently by reason and reported in
/// ``QueueStatistics/droppedByReason``.
public struct OverflowPolicy: Hashable, Sendable, CustomStringConvertible {
    enum Kind: String, Hashable, Sendable {
        case block
        case dropNewest = "drop_newest"
        case dropOldest = "drop_oldest"
    }
    let kind: Kind

    /// Wait for space: lose nothing, slow the producer down. The default.
    public static let block = OverflowPolicy(kind: .block)
    /// Keep the data already queued; drop what does not fit.
    public static let dropNewest = OverflowPolicy(kind: .dropNewest)
    /// Keep the newest data; drop the oldest queued batches to make room.
    public static let dropOldest = OverflowPolicy(kind: .dropOldest)

    /// Parses `block`, `drop_newest` or `drop_oldest`.
    public init?(name: String) {
        guard let kind = Kind(rawValue: name) else { return nil }
        self.kind = kind
    }

    init(kind: Kind) { self.kind = kind }

    /// The configuration name: `block`, `drop_newest`, `drop_oldest`.
    public var description: String { kind.rawValue }
}

/// Why records left a queue without being acknowledged by the backend.
public struct DropReason: Hashable, Sendable, CustomStringConvertible {
    /// The stable name used as counter key and in status output.
    public let name: String

    /// Dropped from an incoming batch by ``OverflowPolicy/dropNewest``.
    public static let overflowDropNewest = DropReason(name: "overflow_drop_newest")
    /// Deleted from the head of the queue by ``OverflowPolicy/dropOldest``.
    public static let overflowDropOldest = DropReason(name: "overflow_drop_oldest")
    /// Discarded by a client reset (``ClientResetMode/discardUnsyncedChanges(beforeReset:afterReset:)``,
    /// or the operator's `ingestd reset --discard`), after a backup copy was written.
    public static let clientReset = DropReason(name: "client_reset")
    /// Moved to another box's queue with `ingestd export --move`.
    public static let exported = DropReason(name: "exported")
    /// Counted as appended but no longer in a damaged file (found by
    /// ``DurableQueue/repair()``: SQLite lost the rows, or the counters
    /// were damaged).
    public static let damaged = DropReason(name: "damaged")
    /// Older than its type's maximum age (``TypeDelivery/maxAgeMilliseconds``).
    public static let expired = DropReason(name: "expired")
    /// Waiting for one sink (of several) longer, or in greater bulk, than
    /// its lag bound allows (``QueueRouting/Sink/maxLagBytes``): dropped
    /// behind for that sink while the others still deliver it.
    public static let sinkLagged = DropReason(name: "sink_lagged")
    /// Owed only to a sink removed from the configuration, every sink
    /// still configured having had it already.
    public static let sinkRemoved = DropReason(name: "sink_removed")

    public var description: String { name }
}

/// How durable a committed append is. The default is ``powerLossSafe``.
public struct Durability: Hashable, Sendable, CustomStringConvertible {
    enum Kind: String, Hashable, Sendable {
        case powerLossSafe = "power_loss_safe"
        case crashSafe = "crash_safe"
    }
    let kind: Kind

    /// WAL with `synchronous=FULL`: the write-ahead log is fsynced at every
    /// commit, so a batch whose append returned survives a power cut.
    public static let powerLossSafe = Durability(kind: .powerLossSafe)
    /// WAL with `synchronous=NORMAL`: fsync only at checkpoints. A batch
    /// whose append returned survives a crash or `kill -9` of the process;
    /// after a power cut the newest commits may be missing (never half
    /// present, never corrupting the file).
    public static let crashSafe = Durability(kind: .crashSafe)

    /// Parses `power_loss_safe` or `crash_safe`.
    public init?(name: String) {
        guard let kind = Kind(rawValue: name) else { return nil }
        self.kind = kind
    }

    init(kind: Kind) { self.kind = kind }

    public var description: String { kind.rawValue }
}
