import EdgeIngestCore

/// Watches the wall clock: whether it is synchronised
/// (``ClockSynchronisation``) and whether it jumped — the wall clock's
/// offset from the boot-time clock changing by a second or more between
/// two looks (NTP slews at most 0.5 ms per second; a step, a
/// fake-hwclock restore or `date -s` moves it at once). The status
/// service looks once per round and logs what changed.
///
/// ```swift
/// let watch = ClockWatch()
/// for change in watch.look() { logger.notice("\(change)") }
/// watch.snapshot.state  // .unsynchronised
/// ```
final class ClockWatch: Sendable {
    enum State: String, Sendable {
        case synchronised, unsynchronised, unknown

        init(_ value: Int64?) {
            switch value {
            case 1: self = .synchronised
            case 0: self = .unsynchronised
            default: self = .unknown
            }
        }
    }

    struct Snapshot: Sendable, Equatable {
        var state: State
        /// Boot-time ms when the state began (0: since boot, as far as this
        /// process knows: it found the clock so when it started).
        var since: Int64
        var jumps: Int64 = 0
        /// The last jump's size (ms, signed) and when (boot-time ms).
        var lastJump: (milliseconds: Int64, at: Int64)?

        static func == (a: Snapshot, b: Snapshot) -> Bool {
            a.state == b.state && a.since == b.since && a.jumps == b.jumps
                && a.lastJump?.milliseconds == b.lastJump?.milliseconds && a.lastJump?.at == b.lastJump?.at
        }
    }

    /// What a look found, each a journal line.
    enum Change: Equatable, CustomStringConvertible {
        /// Found unsynchronised or unknown at the first look, `uptime` ms after boot.
        case startedUnsynchronised(uptime: Int64)
        case startedUnknown
        /// Became synchronised; the net jump since it was last synchronised (or since the start), if any.
        case synchronised(jump: Int64?)
        case lost
        /// Jumped without becoming synchronised.
        case jumped(Int64)

        var description: String {
            switch self {
            case .startedUnsynchronised(let uptime):
                return
                    "clock: unsynchronised since boot, \(ClockWatch.duration(uptime)): readings keep their boot-time clock and leave with a corrected time once it is synchronised"
            case .startedUnknown:
                return
                    "clock: synchronisation unknown (the kernel's NTP status cannot be read and systemd-timesyncd is not running): set [clock] synchronised_file to tell"
            case .synchronised(let jump):
                return "clock synchronised" + (jump.map { ": jumped \(ClockWatch.signedDuration($0))" } ?? "")
            case .lost: return "clock: no longer synchronised"
            case .jumped(let milliseconds): return "clock jumped \(ClockWatch.signedDuration(milliseconds))"
            }
        }
    }

    /// The smallest change of offset called a jump.
    static let jumpMilliseconds: Int64 = 1_000

    private struct Memory {
        var snapshot: Snapshot?
        var offset: Int64 = 0
        /// The offset when last synchronised (or at the start): what a
        /// later synchronisation's jump is measured from.
        var reference: Int64 = 0
    }

    private let memory = PlainMutex(Memory())
    private let read: @Sendable () -> (state: Int64?, wall: Int64, boottime: Int64)

    init(
        read: @escaping @Sendable () -> (state: Int64?, wall: Int64, boottime: Int64) = {
            (ClockSynchronisation.state(), wallClockMilliseconds(), bootTimeMilliseconds())
        }
    ) {
        self.read = read
    }

    /// The state as of the last look (unknown before the first).
    var snapshot: Snapshot { memory.withLock { $0.snapshot } ?? Snapshot(state: .unknown, since: 0) }

    /// Looks at the clock now; returns what changed since the last look.
    func look() -> [Change] {
        let now = read()
        let state = State(now.state)
        let offset = now.wall - now.boottime
        return memory.withLock { memory in
            guard var snapshot = memory.snapshot else {
                memory.snapshot = Snapshot(state: state, since: state == .synchronised ? now.boottime : 0)
                memory.offset = offset
                memory.reference = offset
                switch state {
                case .synchronised: return []
                case .unsynchronised: return [.startedUnsynchronised(uptime: now.boottime)]
                case .unknown: return [.startedUnknown]
                }
            }
            var changes: [Change] = []
            let step = offset - memory.offset
            let jumped = abs(step) >= Self.jumpMilliseconds
            if jumped {
                snapshot.jumps += 1
                snapshot.lastJump = (step, now.boottime)
            }
            if state != snapshot.state {
                if state == .synchronised {
                    let net = offset - memory.reference
                    changes.append(.synchronised(jump: abs(net) >= Self.jumpMilliseconds ? net : nil))
                } else if snapshot.state == .synchronised {
                    if jumped { changes.append(.jumped(step)) }
                    changes.append(.lost)
                } else if jumped {
                    changes.append(.jumped(step))
                }
                snapshot.state = state
                snapshot.since = now.boottime
            } else if jumped {
                changes.append(.jumped(step))
            }
            if state == .synchronised { memory.reference = offset }
            memory.offset = offset
            memory.snapshot = snapshot
            return changes
        }
    }

    /// `+1.6 years`, `-2 h`, `+350 ms`.
    static func signedDuration(_ milliseconds: Int64) -> String {
        (milliseconds < 0 ? "-" : "+") + duration(milliseconds.magnitude > Int64.max ? .max : abs(milliseconds))
    }

    /// `350 ms`, `42 s`, `3 m`, `2.5 h`, `3.2 days`, `1.6 years` (one
    /// decimal below ten of a unit, whole above).
    static func duration(_ milliseconds: Int64) -> String {
        let units: [(limit: Double, size: Double, name: String)] = [
            (1_000, 1, "ms"), (60_000, 1_000, "s"), (3_600_000, 60_000, "m"), (86_400_000, 3_600_000, "h"),
            (365.25 * 86_400_000, 86_400_000, "days"), (.infinity, 365.25 * 86_400_000, "years"),
        ]
        let value = Double(milliseconds)
        let unit = units.first { value < $0.limit } ?? units[units.count - 1]
        let amount = value / unit.size
        if unit.size <= 60_000 || amount >= 10 { return "\(Int64(amount.rounded(.down))) \(unit.name)" }
        let tenths = (amount * 10).rounded(.down) / 10
        return "\(tenths) \(unit.name)"
    }
}
