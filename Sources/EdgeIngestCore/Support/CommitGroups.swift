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
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let groupDone: UnsafeMutablePointer<pthread_cond_t>
    private var waiting: [(ticket: UInt64, request: Request)] = []
    private var outcomes: [UInt64: Result<Outcome, any Error>] = [:]
    private var committing = false
    private var nextTicket: UInt64 = 0

    package init(maxGroup: Int) {
        self.maxGroup = max(1, maxGroup)
        mutex = .allocate(capacity: 1)
        groupDone = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(groupDone, nil)
    }

    deinit {
        pthread_cond_destroy(groupDone)
        pthread_mutex_destroy(mutex)
        groupDone.deallocate()
        mutex.deallocate()
    }

    /// Commits `request`, in a group of those waiting with it, and returns
    /// its own outcome. `commit` gets a group in the order the requests came
    /// and must return one result per request, in that order; it runs on
    /// one thread at a time.
    package func run(
        _ request: Request,
        commit: ([Request]) -> [Result<Outcome, any Error>]
    ) throws -> Outcome {
        pthread_mutex_lock(mutex)
        let ticket = nextTicket
        nextTicket &+= 1
        waiting.append((ticket, request))
        while true {
            if let outcome = outcomes.removeValue(forKey: ticket) {
                pthread_mutex_unlock(mutex)
                return try outcome.get()
            }
            if committing {
                pthread_cond_wait(groupDone, mutex)
                continue
            }
            committing = true
            let group = Array(waiting.prefix(maxGroup))
            waiting.removeFirst(group.count)
            pthread_mutex_unlock(mutex)
            let results = commit(group.map(\.request))
            precondition(results.count == group.count, "CommitGroups: one result per request")
            pthread_mutex_lock(mutex)
            for (member, result) in zip(group, results) { outcomes[member.ticket] = result }
            committing = false
            pthread_cond_broadcast(groupDone)
        }
    }
}
