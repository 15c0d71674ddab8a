#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Group commit: requests that threads hand in while another group is
/// being committed are committed together. The first thread to find no
/// group in progress takes every request waiting (its own among them, up
/// to `maxGroup`), commits them at once, and hands each thread its own
/// outcome; the next takes what gathered meanwhile. Alone, a request is
/// committed at once, as without groups.
///
/// A gateway's HTTP workers each store one batch: one transaction, one
/// fsync, one rewrite of the same few pages per batch was most of the I/O
/// CPU it spent (docs/BENCHMARKS.md, "Received ids in groups, and group
/// commit").
///
/// ```swift
/// let groups = CommitGroups<Batch, Int>(maxGroup: 16)
/// let stored = try groups.run(batch) { batches in
///     batches.map { .success($0.count) }  // one transaction for all
/// }
/// ```
// Unchecked: every var is read and written only under `mutex`.
package final class CommitGroups<Request, Outcome>: @unchecked Sendable {
    /// Requests in one group at the most.
    package let maxGroup: Int
    private let mutex = PlainLock()
    private let groupDone = PlainCondition()
    private var waiting: [(ticket: UInt64, request: Request)] = []
    private var outcomes: [UInt64: Result<Outcome, any Error>] = [:]
    private var committing = false
    private var nextTicket: UInt64 = 0

    package init(maxGroup: Int) {
        self.maxGroup = max(1, maxGroup)
    }

    /// Commits `request`, in a group of those waiting with it, and returns
    /// its own outcome. `commit` gets a group in the order the requests came
    /// and must return one result per request, in that order; it runs on
    /// one thread at a time.
    package func run(
        _ request: Request,
        commit: ([Request]) -> [Result<Outcome, any Error>]
    ) throws -> Outcome {
        mutex.lock()
        let ticket = nextTicket
        nextTicket &+= 1
        waiting.append((ticket, request))
        while true {
            if let outcome = outcomes.removeValue(forKey: ticket) {
                mutex.unlock()
                return try outcome.get()
            }
            if committing {
                mutex.wait(on: groupDone)
                continue
            }
            committing = true
            let group = Array(waiting.prefix(maxGroup))
            waiting.removeFirst(group.count)
            mutex.unlock()
            let results = commit(group.map(\.request))
            precondition(results.count == group.count, "CommitGroups: one result per request")
            mutex.lock()
            for (member, result) in zip(group, results) { outcomes[member.ticket] = result }
            committing = false
            groupDone.broadcast()
        }
    }
}
