/// How an acceptance time was known (docs/QUEUE.md, "Boxes without a
/// real-time clock"): what a backend reads to tell a measured time from a
/// corrected or a doubtful one.
public enum AcceptanceClock: String, Sendable, CaseIterable {
    /// The wall clock was synchronised at acceptance: the time was measured.
    case synchronised
    /// The wall clock was not synchronised then; the time is the boot-time
    /// clock at acceptance plus the offset learnt when it was, later in the
    /// same boot.
    case corrected
    /// The wall clock was not synchronised then and never was in that boot
    /// (or not yet, in this one): the time is the wall clock as it read.
    case unsynchronised
    /// Whether the wall clock was synchronised is not known (a record
    /// queued before format 4, or a box where neither the kernel's NTP
    /// status nor a flag file can be read): the wall clock as it read.
    case unknown
}

/// Which fields the queue adds to each record of a type when it leaves
/// the queue (``DurableQueue/take(maxRecords:maxBytes:singleType:)``), and
/// whether records accepted before the clock was synchronised wait for it.
///
/// The fields are not stored: they are added to the records of a lease,
/// first in each object, so the time a backend receives is always the
/// best the queue knows at sending time.
///
/// ```swift
/// var configuration = QueueConfiguration(location: .file(path: path), objectTypes: [sensor])
/// configuration.acceptanceStamps["WeatherSensor"] = AcceptanceStamping(
///     timeField: "accepted_at", clockField: "accepted_clock", holdUnsynchronised: true)
/// // A lease's record: {"accepted_at":"2026-11-28T16:20:00.123Z","accepted_clock":"corrected","_id":…}
/// ```
public struct AcceptanceStamping: Sendable, Hashable {
    /// Filled with the acceptance time, `2026-11-28T16:20:00.123Z` (UTC,
    /// milliseconds): corrected when it can be. nil: not added.
    public var timeField: String?
    /// Filled with how that time was known (``AcceptanceClock``'s raw
    /// value). nil: not added.
    public var clockField: String?
    /// Whether records accepted in this boot while the clock was known to
    /// be unsynchronised wait in the queue until it is (then leave with a
    /// corrected time) instead of leaving at once marked `unsynchronised`.
    /// Records of an earlier boot that never was synchronised, and records
    /// whose clock state is unknown, are never held: nothing would release
    /// them.
    public var holdUnsynchronised: Bool

    public init(timeField: String? = nil, clockField: String? = nil, holdUnsynchronised: Bool = false) {
        self.timeField = timeField
        self.clockField = clockField
        self.holdUnsynchronised = holdUnsynchronised
    }

    /// The bytes put after a record's `{`: each field and a comma.
    func prefix(milliseconds: Int64, clock: AcceptanceClock) -> [UInt8] {
        var text = ""
        if let timeField { text += "\"\(timeField)\":\"\(Timestamp.iso8601(milliseconds: milliseconds))\"," }
        if let clockField { text += "\"\(clockField)\":\"\(clock.rawValue)\"," }
        return Array(text.utf8)
    }
}

/// A segment's acceptance time as well as the queue knows it now.
struct AcceptanceTime: Equatable {
    var milliseconds: Int64
    var clock: AcceptanceClock

    /// What the queue knows of a segment's acceptance, or nil when the
    /// segment waits: accepted in the current boot (`currentBoot`) while
    /// the clock was unsynchronised, its offset not known yet, and the
    /// type holds such records.
    ///
    /// - Parameters:
    ///   - enqueuedAt: the wall clock at the commit, as it read.
    ///   - offsets: each boot's wall-clock offset from its boot-time clock,
    ///     where known (`boots.offset_ms`).
    static func of(
        enqueuedAt: Int64,
        acceptance: Acceptance?,
        offsets: [Int64: Int64],
        currentBoot: Int64,
        hold: Bool
    ) -> AcceptanceTime? {
        guard let acceptance else { return AcceptanceTime(milliseconds: enqueuedAt, clock: .unknown) }
        if acceptance.clock == 1 { return AcceptanceTime(milliseconds: enqueuedAt, clock: .synchronised) }
        if let offset = offsets[acceptance.boot] {
            return AcceptanceTime(milliseconds: acceptance.boottime + offset, clock: .corrected)
        }
        guard acceptance.clock == 0 else { return AcceptanceTime(milliseconds: enqueuedAt, clock: .unknown) }
        if hold && acceptance.boot == currentBoot { return nil }
        return AcceptanceTime(milliseconds: enqueuedAt, clock: .unsynchronised)
    }
}
