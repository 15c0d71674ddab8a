/// The order in which a record type's queued segments leave.
public enum DrainOrder: String, Sendable, CaseIterable {
    /// The oldest first (the default): what a backend expects to receive in order.
    case oldestFirst = "oldest_first"
    /// The newest first: after an outage, current readings go out at once
    /// and the backlog drains behind them (each segment's records still in
    /// their order).
    case newestFirst = "newest_first"
}

/// How one record type's queued records are ordered and aged
/// (docs/QUEUE.md, "Priority and age").
///
/// ```swift
/// var configuration = QueueConfiguration(location: .file(path: path), objectTypes: [alarm, reading])
/// configuration.typeDelivery["Alarm"] = TypeDelivery(priority: 10)
/// configuration.typeDelivery["Reading"] = TypeDelivery(drainOrder: .newestFirst, maxAgeMilliseconds: 86_400_000)
/// ```
public struct TypeDelivery: Sendable, Hashable {
    /// Records of a type with a higher priority leave before any of a
    /// lower one (within one queue). The default is 0.
    public var priority: Int
    /// Oldest or newest first, among the type's segments. The default is ``DrainOrder/oldestFirst``.
    public var drainOrder: DrainOrder
    /// Queued records older than this (ms since their acceptance, on the
    /// boot-time clock and the offset learnt for it: see
    /// ``QueueAge``) are deleted and counted as dropped, reason
    /// ``DropReason/expired``. nil (the default): kept until delivered.
    public var maxAgeMilliseconds: Int64?
    /// The part of the queue's ``QueueSettings/maxBytes`` kept for this
    /// type under ``OverflowPolicy/dropOldest`` (0 < share ≤ 1): while the
    /// type holds no more than that, other types' readings never push its
    /// readings out — theirs are dropped first; beyond it, its oldest go
    /// like anyone's. nil (the default): no share.
    public var share: Double?

    public init(
        priority: Int = 0,
        drainOrder: DrainOrder = .oldestFirst,
        maxAgeMilliseconds: Int64? = nil,
        share: Double? = nil
    ) {
        self.priority = priority
        self.drainOrder = drainOrder
        self.maxAgeMilliseconds = maxAgeMilliseconds
        self.share = share
    }

    /// Whether segments of this type leave in another order than the
    /// queue's own (oldest first, whatever the type).
    var reorders: Bool { priority != 0 || drainOrder == .newestFirst }
}

/// How old a queued segment is, on clocks a box without a real-time clock
/// can trust: within the boot that accepted it, the boot-time clock alone
/// (no wall clock needed); across boots, the acceptance time as corrected
/// (``AcceptanceTime``) against the wall clock now — each only when known.
enum QueueAge {
    /// The clocks now.
    struct Now {
        var boot: Int64
        var boottime: Int64
        var wall: Int64
        /// 1 synchronised, 0 not, nil unknown (``ClockSynchronisation``).
        var clock: Int64?

        static func current() -> Now {
            Now(
                boot: BootIdentity.current.key,
                boottime: bootTimeMilliseconds(),
                wall: wallClockMilliseconds(),
                clock: ClockSynchronisation.state()
            )
        }
    }

    /// The segment's age in ms, or nil when no clock can tell: accepted in
    /// an earlier boot that never learnt its offset while the clock was
    /// unsynchronised, or now unsynchronised with no offset for this boot.
    /// Where synchronisation cannot be known at all (`clock` nil then and
    /// now), the wall clock is taken as it reads, as every agent does.
    static func of(enqueuedAt: Int64, acceptance: Acceptance?, offsets: [Int64: Int64], now: Now) -> Int64? {
        if let acceptance, acceptance.boot == now.boot { return now.boottime - acceptance.boottime }
        guard
            let accepted = AcceptanceTime.of(
                enqueuedAt: enqueuedAt,
                acceptance: acceptance,
                offsets: offsets,
                currentBoot: now.boot,
                hold: false
            ), accepted.clock != .unsynchronised
        else { return nil }
        let wallNow: Int64
        if now.clock == 0 {
            guard let offset = offsets[now.boot] else { return nil }
            wallNow = now.boottime + offset
        } else {
            wallNow = now.wall
        }
        return wallNow - accepted.milliseconds
    }
}
