/// One lease's way to the sink, as a pure state machine: it is told what
/// happened (an answer, the end of a backoff, a token refresh) and says what
/// to do next (send these records, back off, refresh the credentials,
/// acknowledge with these dead letters, release the lease).
///
/// It does no I/O and reads no clock: ``Uploader`` performs the actions and
/// passes the time and the backoff's jitter in, so bisection, backoff,
/// Retry-After and the shutdown deadline are tested without waiting
/// (async-http-client's connection pool is built the same way).
///
/// ```swift
/// var delivery = LeaseDelivery(leaseID: lease.id, recordCount: lease.recordCount, maxBytes: maxBytes, policy: policy)
/// var action = delivery.start(now: monotonicMilliseconds())
/// while case .send(let batch) = action {
///     let outcome = sink.deliver(…batch.range…)
///     action = delivery.answered(outcome, sentBytes: bytes, now: monotonicMilliseconds(), jitter: .random(in: 0..<1)).action
/// }
/// ```
///
/// The rules (docs/PROTOCOL.md):
/// - the whole lease is sent under the lease id as `Idempotency-Key`; a
///   part of it under `<lease id>:<first>+<count>`, stable across retries;
/// - a passing failure retries the same records after a jittered, capped
///   backoff, at least as long as the server's `Retry-After`; after
///   `maxRetries` (when set) they become dead letters;
/// - a batch refused as bad is halved until the poison records are alone,
///   and those become dead letters; 413 does the same and lowers the
///   batch size for later leases;
/// - a 401 asks for one credential refresh per lease, then waits for the
///   user; a client reset or a hold releases the lease untouched;
/// - during the final drain at shutdown only successes and a 413's split
///   count: any other answer, or the deadline passing, releases the lease.
package struct LeaseDelivery: Sendable {
    /// What the uploader's settings say about one lease.
    package struct Policy: Sendable, Equatable {
        /// Transient failures of one batch before its records become dead
        /// letters; 0 retries forever.
        package var maxRetries: Int
        package var backoff: Backoff
        /// Set during the final drain at shutdown: the monotonic time (ms)
        /// after which nothing more is sent; no retries, and no splits but
        /// a 413's.
        package var finalDrainDeadline: Int64?

        package init(maxRetries: Int, backoff: Backoff, finalDrainDeadline: Int64? = nil) {
            self.maxRetries = maxRetries
            self.backoff = backoff
            self.finalDrainDeadline = finalDrainDeadline
        }
    }

    /// Records of the lease to send in one request.
    package struct Batch: Sendable, Equatable {
        /// Which records of the lease (indexes into its ``QueueLease/recordIDs``).
        package var range: Range<Int>
        package var idempotencyKey: String
        /// Whether these records were sent before and failed (counted as a re-send).
        package var isResend: Bool
    }

    /// A wait before the same records are sent again.
    package struct RetryWait: Sendable, Equatable {
        package var reason: String
        /// 1 for the first retry of these records.
        package var attempt: Int
        package var delayMilliseconds: Int
        /// The first failure since the last success: report it to the owner once.
        package var isFirstOfStreak: Bool
        /// Log it: the first retry and every tenth, not every one.
        package var isWorthLogging: Bool
    }

    /// Why the lease goes back to the queue untouched.
    package enum Release: Sendable, Equatable {
        /// Shutdown (or the final drain's deadline, or a failure during it).
        case stopped
        /// A configuration problem: hold until fixed or the hold time passes.
        case hold(reason: String)
        /// No usable credentials: hold until the user logs in again.
        case waitForUser(reason: String)
        /// The backend demands a client reset; the owner's mode decides.
        case clientReset(reason: String, recoverable: Bool)
    }

    package enum Action: Sendable, Equatable {
        case send(Batch)
        /// Wait, then call ``backoffEnded(now:)``.
        case backOff(RetryWait)
        /// Refresh the credentials, then call ``refreshFinished(succeeded:now:)``.
        case refreshCredentials
        /// Every record is stored or dead-lettered: acknowledge the lease.
        /// Keys are indexes into the lease, values the dead letters' reasons.
        case acknowledge(deadLetters: [Int: String])
        case release(Release)
    }

    /// Something the owner should log; it does not change what happens next.
    package enum Notice: Sendable, Equatable {
        /// `records` transient failures in a row exhausted `maxRetries`.
        case gaveUp(records: Int, reason: String)
        /// The record at `index` was refused on its own.
        case recordRefused(index: Int, reason: String)
        /// The backend refused a batch as too large; later batches are at most `maxBytes`.
        case batchTooLarge(maxBytes: Int)
        /// The backend stored a batch but refused `count` of its records
        /// in its answer (the first at lease index `firstIndex`, for `reason`).
        case rejectedInStoredBatch(count: Int, firstIndex: Int, reason: String)
    }

    /// What to do after an answer, and what to log about it.
    package struct Step: Sendable, Equatable {
        package var action: Action
        package var notices: [Notice] = []
    }

    /// The reason a second 401 gives.
    package static let credentialsRefused =
        "HTTP 401: the backend refused the credentials (log in again, or check the upload token)"

    private let leaseID: String
    private let recordCount: Int
    private let policy: Policy
    /// Parts still to send, first in front; the front is the one in flight.
    private var work: [Range<Int>]
    private var deadLetters: [Int: String] = [:]
    /// Failures of the front part in a row.
    private var attempt = 0
    private var refreshed = false
    private var reportedStreak = false
    /// The batch size in bytes for later leases: lowered by 413s.
    package private(set) var maxBytes: Int

    package init(leaseID: String, recordCount: Int, maxBytes: Int, policy: Policy) {
        self.leaseID = leaseID
        self.recordCount = recordCount
        self.maxBytes = maxBytes
        self.policy = policy
        work = recordCount > 0 ? [0..<recordCount] : []
    }

    /// The first action: send the whole lease.
    package mutating func start(now: Int64) -> Action { next(now: now) }

    /// The sink answered the batch last sent (`sentBytes` long).
    package mutating func answered(_ outcome: UploadOutcome, sentBytes: Int, now: Int64, jitter: Double) -> Step {
        guard let range = work.first else { return Step(action: .acknowledge(deadLetters: deadLetters)) }
        // The final drain takes successes and the splits of a 413 and of a
        // refused batch (bisection down to the refused records, which go to
        // the dead letters as in a running agent): the halves go at once, no
        // waiting (the deadline still bounds them). A pipe (`… | ingestd
        // run`) with 10 refused readings among 10,000 left all 10,000
        // queued at its end before.
        if policy.finalDrainDeadline != nil, !outcome.isStored, outcome != .tooLarge, !outcome.isBadBatch {
            return Step(action: .release(.stopped))
        }
        var notices: [Notice] = []
        switch outcome {
        case .stored(let rejected):
            for r in rejected { deadLetters[range.lowerBound + r.index] = "rejected by the sink: \(r.reason)" }
            if let first = rejected.first {
                notices.append(
                    .rejectedInStoredBatch(
                        count: rejected.count,
                        firstIndex: range.lowerBound + first.index,
                        reason: first.reason
                    )
                )
            }
            work.removeFirst()
            attempt = 0
            reportedStreak = false
        case .retry(let reason, let retryAfter):
            if policy.maxRetries > 0, attempt >= policy.maxRetries {
                notices.append(.gaveUp(records: range.count, reason: reason))
                for i in range { deadLetters[i] = "retries exhausted: \(reason)" }
                work.removeFirst()
                attempt = 0
                break
            }
            let delay = policy.backoff.delay(attempt: attempt, retryAfterSeconds: retryAfter, unit: jitter)
            attempt += 1
            let wait = RetryWait(
                reason: reason,
                attempt: attempt,
                delayMilliseconds: Int(delay * 1000),
                isFirstOfStreak: !reportedStreak,
                isWorthLogging: attempt == 1 || attempt % 10 == 0
            )
            reportedStreak = true
            return Step(action: .backOff(wait))
        case .badBatch(let reason):
            work.removeFirst()
            if range.count == 1 {
                deadLetters[range.lowerBound] = "refused by the backend: \(reason)"
                notices.append(.recordRefused(index: range.lowerBound, reason: reason))
            } else {
                split(range)
            }
            attempt = 0
        case .tooLarge:
            work.removeFirst()
            maxBytes = max(4096, min(maxBytes, sentBytes / 2))
            if range.count == 1 {
                deadLetters[range.lowerBound] = "larger than the backend accepts (HTTP 413)"
            } else {
                split(range)
            }
            notices.append(.batchTooLarge(maxBytes: maxBytes))
        case .unauthorized:
            if refreshed { return Step(action: .release(.waitForUser(reason: Self.credentialsRefused))) }
            return Step(action: .refreshCredentials)
        case .clientReset(let reason, let recoverable):
            return Step(action: .release(.clientReset(reason: reason, recoverable: recoverable)))
        case .hold(let reason):
            return Step(action: .release(.hold(reason: reason)))
        }
        return Step(action: next(now: now), notices: notices)
    }

    /// The backoff asked for by the last answer is over.
    package mutating func backoffEnded(now: Int64) -> Action { next(now: now) }

    /// The credential refresh asked for after a 401 ended.
    package mutating func refreshFinished(succeeded: Bool, now: Int64) -> Action {
        guard succeeded else { return .release(.waitForUser(reason: Self.credentialsRefused)) }
        refreshed = true
        return next(now: now)
    }

    /// No credentials could be had for the request (not a passing network
    /// problem: those are answered as ``UploadOutcome/retry(reason:retryAfterSeconds:)``).
    package mutating func credentialsUnavailable(reason: String) -> Action {
        .release(.waitForUser(reason: reason))
    }

    /// Whether a partial batch should wait for more readings first, and how
    /// long: a lease below both size limits whose oldest reading is younger
    /// than the linger time waits out the rest of it — never longer than the
    /// linger time itself: the age comes from the wall clock, and after the
    /// clock stepped back a reading can look younger than zero.
    package static func lingerMilliseconds(
        recordCount: Int,
        payloadBytes: Int,
        oldestAgeMilliseconds: Int64,
        maxRecords: Int,
        maxBytes: Int,
        lingerMilliseconds: Int
    ) -> Int? {
        guard recordCount < maxRecords, payloadBytes < maxBytes / 2, oldestAgeMilliseconds < lingerMilliseconds else {
            return nil
        }
        return Int(Int64(lingerMilliseconds) - max(0, oldestAgeMilliseconds))
    }

    private mutating func split(_ range: Range<Int>) {
        let mid = range.lowerBound + range.count / 2
        work.insert(contentsOf: [range.lowerBound..<mid, mid..<range.upperBound], at: 0)
    }

    /// The front part, or the acknowledgement once nothing is left.
    private func next(now: Int64) -> Action {
        guard let range = work.first else { return .acknowledge(deadLetters: deadLetters) }
        if let deadline = policy.finalDrainDeadline, now > deadline { return .release(.stopped) }
        let key = range == 0..<recordCount ? leaseID : "\(leaseID):\(range.lowerBound)+\(range.count)"
        return .send(Batch(range: range, idempotencyKey: key, isResend: attempt > 0))
    }
}
