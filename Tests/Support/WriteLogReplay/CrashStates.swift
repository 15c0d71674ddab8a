/// A state the logged device may be in after a power cut, and what must
/// hold in it.
///
/// The disk model (CrashMonkey's, OSDI 2018): a write is durable once a
/// flush completed after it, or once it completed if it was FUA; writes
/// completed since the last flush sit in a volatile cache that may have
/// reached the medium in any part. dm-log-writes logs writes at the flush
/// that made them durable, flushes and FUA writes as they complete, and
/// marks as the test sends them, so a mark's position says which flushes had
/// completed when the test issued it.
public struct CrashState: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// The power cut right after a flush or FUA completed: every entry
        /// up to it on the medium.
        case barrier
        /// The power cut just before a flush completed: the entries up to
        /// the flush before it, the FUA writes since, and some of the
        /// unflushed writes (the disk's cache wrote some back, not others).
        case unflushedSubset = "subset"
    }

    public let kind: Kind
    /// Entries `0..<durablePrefix` are on the medium.
    public let durablePrefix: Int
    /// Entries after the prefix that are on the medium too, in log order
    /// (for two writes of one sector the later one wins, as a cache keeps
    /// only the newest copy of a sector; the order of writes to different
    /// sectors does not change the state).
    public let extraEntries: [Int]
    /// The last mark the test had issued before the power cut: what it
    /// stands for must be on the medium. Nil: no mark yet.
    public let requiredMark: String?
    /// Names the state in reports: "barrier@812", "subset@790+3/11#2".
    public let name: String
}

/// Every crash state of a log at its flushes and FUA writes, and up to
/// `subsetsPerInterval` subsets of the unflushed writes between two flushes.
///
///     var random = SplitMix64(seed: 45)
///     let states = CrashStatePlan.states(of: log, subsetsPerInterval: 4, using: &random)
public enum CrashStatePlan {
    public static func states(
        of log: WriteLog,
        subsetsPerInterval: Int,
        using random: inout some RandomNumberGenerator
    ) -> [CrashState] {
        let entries = log.entries
        // The last mark before each position: lastMark[i] is the newest mark among entries 0..<i.
        var lastMark: [String?] = [nil]
        lastMark.reserveCapacity(entries.count + 1)
        for entry in entries { lastMark.append(entry.mark ?? lastMark[lastMark.count - 1]) }

        var states: [CrashState] = []
        for entry in entries where entry.isBarrier {
            // The cut came after this barrier and before the next entry that
            // is not a mark: marks sent in between had been issued.
            var next = entry.index + 1
            while next < entries.count, entries[next].flags.contains(.mark) { next += 1 }
            states.append(
                CrashState(
                    kind: .barrier,
                    durablePrefix: entry.index + 1,
                    extraEntries: [],
                    requiredMark: lastMark[next],
                    name: "barrier@\(entry.index)"
                )
            )
        }

        guard subsetsPerInterval > 0 else { return states }
        let flushes = entries.filter { $0.flags.contains(.flush) }.map(\.index)
        for (previous, flush) in zip([-1] + flushes, flushes) {
            // Between two flushes: FUA writes are on the medium, the others may be.
            let between = entries[(previous + 1)..<flush].filter(\.changesDevice)
            let durable = between.filter { $0.flags.contains(.fua) }.map(\.index)
            let cached = between.filter { !$0.flags.contains(.fua) }.map(\.index)
            guard !cached.isEmpty else { continue }
            // Distinct subsets; all but the full one when there are few.
            let possible = cached.count >= 62 ? Int.max : (1 << cached.count) - 1
            var seen: Set<[Int]> = []
            var attempts = 0
            while seen.count < min(subsetsPerInterval, possible), attempts < subsetsPerInterval * 8 {
                attempts += 1
                var chosen = cached.filter { _ in Bool.random(using: &random) }
                if chosen.count == cached.count { chosen.removeLast() }
                guard seen.insert(chosen).inserted else { continue }
                states.append(
                    CrashState(
                        kind: .unflushedSubset,
                        durablePrefix: previous + 1,
                        extraEntries: (durable + chosen).sorted(),
                        requiredMark: lastMark[flush],
                        name: "subset@\(previous + 1)+\(chosen.count)/\(cached.count)#\(seen.count)"
                    )
                )
            }
        }
        // In the order a replay reaches them: each state's prefix once.
        return states.enumerated().sorted {
            ($0.element.durablePrefix, $0.offset) < ($1.element.durablePrefix, $1.offset)
        }.map(\.element)
    }
}
