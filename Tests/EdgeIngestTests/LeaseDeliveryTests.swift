import Testing

@testable import EdgeIngestCore

/// The uploader's decisions, driven without a sink, a queue or a clock.
@Suite struct LeaseDeliveryTests {
    typealias Action = LeaseDelivery.Action

    static let policy = LeaseDelivery.Policy(maxRetries: 0, backoff: Backoff(baseSeconds: 0.5, capSeconds: 60))

    /// What one delivery did, step by step.
    struct Trace {
        var sent: [LeaseDelivery.Batch] = []
        var waits: [LeaseDelivery.RetryWait] = []
        var notices: [LeaseDelivery.Notice] = []
        var refreshes = 0
        var end: Action?
        var maxBytes = 0
    }

    /// Runs a delivery of `records` records to completion, answering each
    /// batch with `answer` (called with the batch and how often it was sent)
    /// and every refresh with `refreshSucceeds`. Batches are 100 bytes a record.
    static func drive(
        records: Int,
        maxBytes: Int = 1 << 20,
        policy: LeaseDelivery.Policy = policy,
        now: Int64 = 0,
        refreshSucceeds: Bool = true,
        answer: (LeaseDelivery.Batch, Int) -> UploadOutcome
    ) -> Trace {
        var delivery = LeaseDelivery(leaseID: "L", recordCount: records, maxBytes: maxBytes, policy: policy)
        var trace = Trace()
        var action = delivery.start(now: now)
        var sends: [String: Int] = [:]
        for _ in 0..<10_000 {
            switch action {
            case .send(let batch):
                trace.sent.append(batch)
                sends[batch.idempotencyKey, default: 0] += 1
                let step = delivery.answered(
                    answer(batch, sends[batch.idempotencyKey]!),
                    sentBytes: batch.range.count * 100,
                    now: now,
                    jitter: 0.5
                )
                trace.notices += step.notices
                action = step.action
            case .backOff(let wait):
                trace.waits.append(wait)
                action = delivery.backoffEnded(now: now)
            case .refreshCredentials:
                trace.refreshes += 1
                action = delivery.refreshFinished(succeeded: refreshSucceeds, now: now)
            case .acknowledge, .release:
                trace.end = action
                trace.maxBytes = delivery.maxBytes
                return trace
            }
        }
        Issue.record("the delivery did not end")
        return trace
    }

    @Test func aStoredLeaseIsSentOnceUnderItsIdAndAcknowledged() {
        let trace = Self.drive(records: 5) { _, _ in .stored(rejected: []) }
        #expect(trace.sent == [.init(range: 0..<5, idempotencyKey: "L", isResend: false)])
        #expect(trace.end == .acknowledge(deadLetters: [:]))
    }

    @Test func poisonRecordsAreIsolatedByBisectionAndEveryOtherRecordIsStoredOnce() {
        let poison: Set = [3, 6]
        var stored: [Int] = []
        let trace = Self.drive(records: 8) { batch, _ in
            if batch.range.contains(where: poison.contains) { return .badBatch(reason: "HTTP 422") }
            stored += batch.range
            return .stored(rejected: [])
        }
        #expect(stored.sorted() == [0, 1, 2, 4, 5, 7])
        #expect(
            trace.end
                == .acknowledge(deadLetters: [
                    3: "refused by the backend: HTTP 422", 6: "refused by the backend: HTTP 422",
                ])
        )
        #expect(
            trace.notices == [
                .recordRefused(index: 3, reason: "HTTP 422"), .recordRefused(index: 6, reason: "HTTP 422"),
            ]
        )
        // Halves, front first, each part under its own stable key.
        #expect(
            trace.sent.map(\.idempotencyKey) == [
                "L", "L:0+4", "L:0+2", "L:2+2", "L:2+1", "L:3+1", "L:4+4", "L:4+2", "L:6+2", "L:6+1", "L:7+1",
            ]
        )
        #expect(trace.waits.isEmpty && !trace.sent.contains(where: \.isResend))
    }

    @Test func perRecordRejectionsOfAPartAreDeadLettersAtTheirPlaceInTheLease() {
        let trace = Self.drive(records: 4) { batch, _ in
            if batch.range.count == 4 { return .badBatch(reason: "HTTP 400") }
            return .stored(rejected: batch.range.lowerBound == 2 ? [RecordRejection(index: 1, reason: "bad unit")] : [])
        }
        #expect(trace.end == .acknowledge(deadLetters: [3: "rejected by the sink: bad unit"]))
    }

    @Test func passingFailuresBackOffWithGrowingDelaysAndAreReportedOncePerStreak() {
        let trace = Self.drive(records: 2) { _, sends in
            sends <= 21 ? .retry(reason: "HTTP 503", retryAfterSeconds: nil) : .stored(rejected: [])
        }
        #expect(trace.waits.count == 21)
        #expect(trace.waits.map(\.attempt) == Array(1...21))
        // jitter 0.5: half of min(60 s, 0.5 s × 2^n).
        #expect(trace.waits.prefix(4).map(\.delayMilliseconds) == [250, 500, 1000, 2000])
        #expect(trace.waits.last?.delayMilliseconds == 30_000)
        #expect(trace.waits.filter(\.isFirstOfStreak).map(\.attempt) == [1])
        #expect(trace.waits.filter(\.isWorthLogging).map(\.attempt) == [1, 10, 20])
        #expect(trace.sent.map(\.isResend) == [false] + Array(repeating: true, count: 21))
        #expect(Set(trace.sent.map(\.idempotencyKey)) == ["L"])
        #expect(trace.end == .acknowledge(deadLetters: [:]))
    }

    @Test func retryAfterIsHonouredButCappedAtAnHour() {
        let asked = Self.drive(records: 1) { _, sends in
            sends == 1 ? .retry(reason: "HTTP 429", retryAfterSeconds: 7) : .stored(rejected: [])
        }
        #expect(asked.waits.map(\.delayMilliseconds) == [7_000])
        let absurd = Self.drive(records: 1) { _, sends in
            sends == 1 ? .retry(reason: "HTTP 429", retryAfterSeconds: 1e9) : .stored(rejected: [])
        }
        #expect(absurd.waits.map(\.delayMilliseconds) == [3_600_000])
    }

    @Test func aNewStreakAfterASuccessIsReportedAgain() {
        // The first half fails once then is stored; the second half fails once too.
        let trace = Self.drive(records: 4) { batch, sends in
            if batch.range.count == 4 { return .badBatch(reason: "HTTP 400") }
            return sends == 1 ? .retry(reason: "timeout", retryAfterSeconds: nil) : .stored(rejected: [])
        }
        #expect(trace.waits.map(\.isFirstOfStreak) == [true, true])
        #expect(trace.waits.map(\.attempt) == [1, 1])
    }

    @Test func exhaustedRetriesMoveTheRecordsToDeadLettersAndTheRestGoesOn() {
        let policy = LeaseDelivery.Policy(maxRetries: 3, backoff: Backoff())
        let trace = Self.drive(records: 4, policy: policy) { batch, _ in
            if batch.range.count == 4 { return .badBatch(reason: "HTTP 400") }
            return batch.range.lowerBound == 0
                ? .retry(reason: "HTTP 500", retryAfterSeconds: nil) : .stored(rejected: [])
        }
        #expect(trace.waits.count == 3)
        #expect(trace.notices == [.gaveUp(records: 2, reason: "HTTP 500")])
        #expect(
            trace.end
                == .acknowledge(deadLetters: [0: "retries exhausted: HTTP 500", 1: "retries exhausted: HTTP 500"])
        )
        #expect(trace.sent.last?.idempotencyKey == "L:2+2")
    }

    @Test func tooLargeSplitsTheBatchAndLowersTheSizeForLaterLeases() {
        // 100 bytes a record: parts of more than two records are too large.
        let trace = Self.drive(records: 8, maxBytes: 1_000_000) { batch, _ in
            batch.range.count > 2 ? .tooLarge : .stored(rejected: [])
        }
        #expect(trace.end == .acknowledge(deadLetters: [:]))
        #expect(trace.sent.map(\.idempotencyKey) == ["L", "L:0+4", "L:0+2", "L:2+2", "L:4+4", "L:4+2", "L:6+2"])
        // Halved from the size sent, never below 4096.
        #expect(trace.maxBytes == 4096)
        #expect(trace.notices == Array(repeating: .batchTooLarge(maxBytes: 4096), count: 3))
        let big = Self.drive(records: 200, maxBytes: 1_000_000) { batch, _ in
            batch.range.count == 200 ? .tooLarge : .stored(rejected: [])
        }
        #expect(big.maxBytes == 10_000)
    }

    @Test func aSingleRecordTooLargeIsADeadLetter() {
        let trace = Self.drive(records: 1) { _, _ in .tooLarge }
        #expect(trace.end == .acknowledge(deadLetters: [0: "larger than the backend accepts (HTTP 413)"]))
    }

    @Test func a401RefreshesOnceAndSendsTheSameBatchAgain() {
        let trace = Self.drive(records: 3) { _, sends in sends == 1 ? .unauthorized : .stored(rejected: []) }
        #expect(trace.refreshes == 1)
        #expect(trace.sent.map(\.idempotencyKey) == ["L", "L"])
        #expect(trace.end == .acknowledge(deadLetters: [:]))
    }

    @Test func aSecond401OrAFailedRefreshWaitsForTheUser() {
        let again = Self.drive(records: 3) { _, _ in .unauthorized }
        #expect(again.refreshes == 1)
        #expect(again.end == .release(.waitForUser(reason: LeaseDelivery.credentialsRefused)))
        let failed = Self.drive(records: 3, refreshSucceeds: false) { _, _ in .unauthorized }
        #expect(failed.sent.count == 1)
        #expect(failed.end == .release(.waitForUser(reason: LeaseDelivery.credentialsRefused)))
    }

    @Test(arguments: [
        (UploadOutcome.hold(reason: "HTTP 403"), LeaseDelivery.Release.hold(reason: "HTTP 403")),
        (.clientReset(reason: "HTTP 409", recoverable: false), .clientReset(reason: "HTTP 409", recoverable: false)),
    ])
    func holdsAndClientResetsReleaseTheLeaseUntouched(outcome: UploadOutcome, release: LeaseDelivery.Release) {
        let trace = Self.drive(records: 4) { batch, _ in
            // Even after part of the lease was stored: an acknowledgement covers the whole lease.
            batch.range.count == 4
                ? .badBatch(reason: "x") : batch.range.lowerBound == 0 ? .stored(rejected: []) : outcome
        }
        #expect(trace.end == .release(release))
    }

    @Test func missingCredentialsWaitForTheUser() {
        var delivery = LeaseDelivery(leaseID: "L", recordCount: 2, maxBytes: 1000, policy: Self.policy)
        _ = delivery.start(now: 0)
        #expect(delivery.credentialsUnavailable(reason: "logged out") == .release(.waitForUser(reason: "logged out")))
    }

    @Test func theFinalDrainTakesOnlySuccessesAndSplitsOn413() {
        let policy = LeaseDelivery.Policy(maxRetries: 0, backoff: Backoff(), finalDrainDeadline: 5_000)
        for outcome: UploadOutcome in [
            .retry(reason: "HTTP 503", retryAfterSeconds: nil), .unauthorized,
            .hold(reason: "HTTP 404"), .clientReset(reason: "HTTP 409", recoverable: true),
        ] {
            let trace = Self.drive(records: 4, policy: policy, now: 1_000) { _, _ in outcome }
            #expect(trace.sent.count == 1 && trace.waits.isEmpty && trace.refreshes == 0)
            #expect(trace.end == .release(.stopped))
        }
        let stored = Self.drive(records: 4, policy: policy, now: 1_000) { _, _ in .stored(rejected: []) }
        #expect(stored.end == .acknowledge(deadLetters: [:]))
        // A 413 at shutdown is split at once (a backend with a lower body
        // limit than the batch size must not leave the queue full at every stop).
        let split = Self.drive(records: 4, policy: policy, now: 1_000) { batch, _ in
            batch.range.count > 1 ? .tooLarge : .stored(rejected: [])
        }
        #expect(split.sent.map(\.range.count) == [4, 2, 1, 1, 2, 1, 1] && split.waits.isEmpty)
        #expect(split.end == .acknowledge(deadLetters: [:]))
        // A refused batch at shutdown is bisected down to its refused record,
        // which is dead-lettered; the rest is stored (issue 38).
        let bisected = Self.drive(records: 4, policy: policy, now: 1_000) { batch, _ in
            batch.range.contains(2) ? .badBatch(reason: "HTTP 400") : .stored(rejected: [])
        }
        #expect(bisected.sent.map(\.range.count) == [4, 2, 2, 1, 1] && bisected.waits.isEmpty)
        #expect(bisected.end == .acknowledge(deadLetters: [2: "refused by the backend: HTTP 400"]))
    }

    @Test func nothingIsSentPastTheFinalDrainsDeadlineButWhatIsDoneIsAcknowledged() {
        let policy = LeaseDelivery.Policy(maxRetries: 0, backoff: Backoff(), finalDrainDeadline: 5_000)
        var late = LeaseDelivery(leaseID: "L", recordCount: 2, maxBytes: 1000, policy: policy)
        #expect(late.start(now: 5_001) == .release(.stopped))
        var onTime = LeaseDelivery(leaseID: "L", recordCount: 2, maxBytes: 1000, policy: policy)
        #expect(onTime.start(now: 5_000) == .send(.init(range: 0..<2, idempotencyKey: "L", isResend: false)))
        #expect(
            onTime.answered(.stored(rejected: []), sentBytes: 10, now: 9_000, jitter: 0).action
                == .acknowledge(deadLetters: [:])
        )
    }

    @Test(
        arguments: [
            // records, bytes, age → wait
            (10, 100, 50, 150 as Int?),
            (10, 100, 199, 1),
            (10, 100, 200, nil),  // old enough
            (1000, 100, 0, nil),  // full by count
            (10, 500_000, 0, nil),  // half the byte limit
            (10, 499_999, 0, 200),
            (10, 100, -86_400_000, 200),  // the wall clock stepped back a day: one linger, not a day
        ] as [(Int, Int, Int64, Int?)]
    )
    func aPartialBatchLingersUntilItsOldestReadingIsOldEnough(records: Int, bytes: Int, age: Int64, wait: Int?) {
        let linger = LeaseDelivery.lingerMilliseconds(
            recordCount: records,
            payloadBytes: bytes,
            oldestAgeMilliseconds: age,
            maxRecords: 1000,
            maxBytes: 1_000_000,
            lingerMilliseconds: 200
        )
        #expect(linger == wait)
    }

    @Test func phasesHaveTheNamesStatusShows() {
        let phases: [UploadPhase] = [.idle, .uploading, .backingOff, .error, .waitingForUser, .clientReset]
        #expect(
            phases.map(\.name) == ["idle", "uploading", "backing_off", "error", "waiting_for_user", "client_reset"]
        )
        #expect(phases.filter(\.isHeld) == [.error, .waitingForUser])
    }

    @Test func rejectionLinesAreBoundedPerMinuteAndSayWhatWentUnlogged() {
        var budget = Uploader.RejectionLogBudget()
        for _ in 0..<Uploader.RejectionLogBudget.linesPerMinute { #expect(budget.admit(2, now: 1_000) == 0) }
        #expect(budget.admit(3, now: 2_000) == nil)
        #expect(budget.admit(4, now: 59_999) == nil)
        #expect(budget.admit(1, now: 61_000) == 7)
        #expect(budget.admit(1, now: 61_001) == 0)
    }
}
