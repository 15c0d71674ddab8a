import Logging
import Synchronization

/// Streams queued records to the backend and deletes them only once the
/// backend confirmed them (docs/PROTOCOL.md). Shared by the agent's upload
/// service and ``IngestRealm``'s background upload.
///
/// One request per lease of one record type. The lease id (first `_id` and
/// count) is the `Idempotency-Key`, stable across retries and restarts.
/// What each answer leads to (retry with backoff, bisection into dead
/// letters, 413 splits, one credential refresh, a hold) is decided by
/// ``LeaseDelivery``, a pure state machine; this driver performs what it
/// decides: the sink calls, the waits, the queue calls, the state the
/// status shows, the log lines and the owner's hooks.
package final class Uploader: Sendable {
    package let queue: DurableQueue
    package let settings: UploadSettings
    package let state: UploadState
    package let hooks: UploadHooks
    let logger: Logger
    let userAgent: String
    private let resumeGeneration = Atomic<UInt64>(0)
    /// Written by ``resume()`` so a hold wakes at once instead of polling.
    private let resumeSignal = WakeSignal()
    /// How long an idle uploader (empty queue) waits before looking at the
    /// queue again when no commit woke it: commits always wake it, so this
    /// is only a safety net, kept rare so an idle agent sleeps.
    static let idleRecheckMilliseconds = 10_000
    /// Since when (monotonic ms) uploads have failed or been held; nil while they succeed.
    private let troubleSince = PlainMutex<Int64?>(nil)
    /// Bounds the log lines about records refused inside stored batches.
    private let rejectionLogBudget = PlainMutex(RejectionLogBudget())
    /// Whether a batch was stored since the last client-reset demand.
    private let storedSinceReset = Atomic<Bool>(true)
    /// Until when (monotonic ms) partial batches go without lingering:
    /// someone waits for everything written so far (``flush(forMilliseconds:)``).
    private let flushUntil = Atomic<Int64>(0)
    /// Builds the sink on the upload thread; nil: the ingest protocol to
    /// `settings.http.url`.
    let makeSink: SinkFactory?
    /// The queue's sink this uploader takes records for
    /// (``QueueRouting/Sink/name``): each sink has its own uploader.
    package let sinkName: String

    package init(
        queue: DurableQueue,
        settings: UploadSettings,
        state: UploadState,
        hooks: UploadHooks,
        userAgent: String,
        logger: Logger,
        sink: SinkFactory? = nil,
        sinkName: String = QueueRouting.defaultSinkName
    ) {
        self.sinkName = sinkName
        self.queue = queue
        self.settings = settings
        self.state = state
        self.hooks = hooks
        self.userAgent = userAgent
        self.logger = logger
        self.makeSink = sink
    }

    /// Ends a hold early (new credentials, an operator's reset): the next
    /// batch is tried at once.
    package func resume() {
        resumeGeneration.add(1, ordering: .sequentiallyConsistent)
        resumeSignal.wake()
    }

    /// Sends partial batches without lingering for the next
    /// `milliseconds` (an app waiting for its writes to leave); call
    /// again to extend. Wake the uploader after calling it.
    package func flush(forMilliseconds milliseconds: Int) {
        flushUntil.store(monotonicMilliseconds() + Int64(milliseconds), ordering: .relaxed)
    }

    /// Why processing a lease ended.
    enum LeaseResult { case acknowledged, stopped, held }

    /// Uploads until `stop` fires, then drains for at most the shutdown
    /// timeout. Blocking: run it on its own thread. `wake` is signalled by
    /// producers after each commit.
    package func run(stop: StopSignal, wake: WakeSignal) throws {
        let sink = try makeSink?() ?? IngestProtocolSink(settings: settings.http, userAgent: userAgent)
        sink.attach(logger: logger)
        sink.attach(state: state)
        var maxBytes = settings.maxBytes
        logger.log(level: settings.routineLogLevel, "Uploading to the sink", metadata: ["ingest.sink": "\(sink)"])
        while !stop.isStopped {
            state.expectProgress(within: 0)
            guard
                let lease = try queue.take(
                    maxRecords: settings.maxRecords,
                    maxBytes: maxBytes,
                    singleType: true,
                    sink: sinkName
                )
            else {
                state.update {
                    $0.state = .idle
                    $0.reason = nil
                }
                _ = waitForWork(wake: wake, stop: stop, milliseconds: Self.idleRecheckMilliseconds)
                continue
            }
            // Linger: a partial batch waits a little for more readings
            // (unless someone waits for it: read only when it would linger).
            if let linger = LeaseDelivery.lingerMilliseconds(
                recordCount: lease.recordCount,
                payloadBytes: lease.payload.count,
                oldestAgeMilliseconds: wallClockMilliseconds() - (lease.segments.first?.enqueuedAt ?? 0),
                maxRecords: settings.maxRecords,
                maxBytes: maxBytes,
                lingerMilliseconds: settings.lingerMilliseconds
            ), monotonicMilliseconds() >= flushUntil.load(ordering: .relaxed) {
                try queue.release(lease)
                _ = waitForWork(wake: wake, stop: stop, milliseconds: linger)
                continue
            }
            // Read before sending: a resume() that comes while this batch
            // is being refused still ends the hold it leads to.
            let generation = resumeGeneration.load(ordering: .sequentiallyConsistent)
            switch try process(lease, sink: sink, maxBytes: &maxBytes, stop: stop, finalDrainDeadline: nil) {
            case .acknowledged: continue
            case .stopped: break
            case .held: hold(stop: stop, since: generation)
            }
        }
        try finalDrain(sink: sink, maxBytes: &maxBytes)
    }

    /// On shutdown: upload what is queued until it is empty or the
    /// shutdown timeout passes; no retries. What is left stays queued.
    /// When readings are left, says why (once, at warning) and records it
    /// in ``UploadState/Snapshot/leftAtStop``.
    private func finalDrain(sink: any BatchSink, maxBytes: inout Int) throws {
        let deadline = monotonicMilliseconds() + Int64(settings.shutdownTimeoutMilliseconds)
        let never = StopSignal()
        var failed = false
        while monotonicMilliseconds() < deadline, !state.snapshot.state.isHeld,
            let lease = try queue.take(
                maxRecords: settings.maxRecords,
                maxBytes: maxBytes,
                singleType: true,
                sink: sinkName
            )
        {
            guard
                try process(lease, sink: sink, maxBytes: &maxBytes, stop: never, finalDrainDeadline: deadline)
                    == .acknowledged
            else {
                failed = true
                break
            }
        }
        let left = (try? queuedForSink()) ?? 0
        guard left > 0 else {
            logger.log(level: settings.routineLogLevel, "Uploader stopped", metadata: ["ingest.queued": "0"])
            return
        }
        let snapshot = state.snapshot
        let reason: String
        if snapshot.state.isHeld {
            reason = "uploads are held: \(snapshot.reason ?? snapshot.state.name)"
        } else if failed, let why = snapshot.reason ?? snapshot.lastOutcome {
            reason = "the last upload failed: \(why)"
        } else {
            reason = "the shutdown timeout (\(settings.shutdownTimeoutMilliseconds) ms) ran out"
        }
        state.update { $0.leftAtStop = .init(records: left, reason: reason) }
        logger.warning(
            "Uploader stopped with readings still queued; they stay in the queue and upload at the next start",
            metadata: ["ingest.queued": "\(left)", "ingest.reason": "\(reason)"]
        )
    }

    /// Waits out a hold: the hold time, a ``resume()`` since `generation`,
    /// or the stop signal.
    private func hold(stop: StopSignal, since generation: UInt64) {
        let until = monotonicSeconds() + Double(settings.holdMilliseconds) / 1000
        // A wake-up from a resume() older than `generation` is drained and
        // the wait goes on.
        while monotonicSeconds() < until, resumeGeneration.load(ordering: .sequentiallyConsistent) == generation {
            let left = Int((until - monotonicSeconds()) * 1000) + 1
            if case .stopped = waitForWork(wake: resumeSignal, stop: stop, milliseconds: left) { return }
        }
    }

    /// Sends one lease as ``LeaseDelivery`` decides, performing its actions,
    /// and acknowledges it when every part is stored or dead-lettered.
    private func process(
        _ lease: QueueLease,
        sink: any BatchSink,
        maxBytes: inout Int,
        stop: StopSignal,
        finalDrainDeadline: Int64?
    ) throws -> LeaseResult {
        let policy = LeaseDelivery.Policy(
            maxRetries: settings.maxRetries,
            backoff: settings.backoff,
            finalDrainDeadline: finalDrainDeadline
        )
        var delivery = LeaseDelivery(
            leaseID: lease.id,
            recordCount: lease.recordCount,
            maxBytes: maxBytes,
            policy: policy
        )
        defer { maxBytes = delivery.maxBytes }
        /// Why no credentials could be had, to report with the wait for the user.
        var credentialsError: EdgeIngestError?
        var action = delivery.start(now: monotonicMilliseconds())
        /// Whether the sink stored any part of this lease.
        var storedAny = false
        while true {
            switch action {
            case .send(let batch):
                if stop.isStopped {
                    try queue.release(lease)
                    return .stopped
                }
                var headers = requestHeaders(for: lease, key: batch.idempotencyKey)
                var offlineReason: String?
                do {
                    headers += try hooks.requestHeaders()
                } catch let error as EdgeIngestError where error.code == .offline {
                    offlineReason = error.message  // a login or refresh that could not reach the backend: passing
                } catch {
                    credentialsError = error as? EdgeIngestError
                    action = delivery.credentialsUnavailable(reason: "\(error)")
                    continue
                }
                state.update {
                    $0.state = .uploading
                    $0.requests += 1
                    if batch.isResend { $0.resends += 1 }
                }
                state.expectProgress(
                    within: sink.deliveryTimeLimitMilliseconds ?? settings.http.connectTimeoutMilliseconds
                        + settings.http.timeoutMilliseconds
                )
                let payload = lease.payload(records: batch.range)
                let outcome: UploadOutcome
                if let offlineReason {
                    outcome = .retry(reason: offlineReason, retryAfterSeconds: nil)
                } else {
                    let started = monotonicSeconds()
                    defer {
                        let took = monotonicSeconds() - started
                        state.update { $0.latency.record(seconds: took) }
                    }
                    outcome = sink.deliver(
                        SinkBatch(
                            type: lease.segments[0].type,
                            idempotencyKey: batch.idempotencyKey,
                            payload: payload,
                            recordCount: batch.range.count,
                            headers: headers
                        )
                    )
                }
                if outcome.isStored {
                    recordStored(batch.range.count)
                    storedAny = true
                }
                let step = delivery.answered(
                    outcome,
                    sentBytes: payload.count,
                    now: monotonicMilliseconds(),
                    jitter: Double.random(in: 0..<1)
                )
                log(step.notices, of: lease)
                if finalDrainDeadline != nil, case .release(.stopped) = step.action, !outcome.isStored {
                    recordLastUpload("failed: \(outcome.reason)")  // the final drain stops: say why
                }
                action = step.action
            case .backOff(let wait):
                announce(wait)
                if case .stopped = sleep(stop: stop, milliseconds: wait.delayMilliseconds) {
                    try queue.release(lease)
                    return .stopped
                }
                action = delivery.backoffEnded(now: monotonicMilliseconds())
            case .refreshCredentials:
                let refreshed = hooks.refreshCredentials()
                if refreshed { logger.notice("The backend refused the access token; refreshed it and sending again") }
                action = delivery.refreshFinished(succeeded: refreshed, now: monotonicMilliseconds())
            case .acknowledge(let deadLetters):
                state.expectProgress(within: 0)
                try hooks.acknowledge(lease, deadLetters) { try queue.acknowledge(lease, deadLetters: deadLetters) }
                state.update {
                    $0.reason = nil
                    $0.until = nil
                }
                if storedAny { logRecovery() }  // not after a lease that only became dead letters
                return .acknowledged
            case .release(let release):
                try queue.release(lease)
                return settle(release, credentialsError: credentialsError)
            }
        }
    }

    /// The protocol's headers for one request (docs/PROTOCOL.md); the
    /// owner's credentials are added to them.
    private func requestHeaders(for lease: QueueLease, key: String) -> [(String, String)] {
        let segment = lease.segments[0]
        return [
            ("Content-Type", "application/x-ndjson"),
            ("Idempotency-Key", key),
            ("EdgeIngest-Protocol", "1"),
            ("EdgeIngest-Record-Type", segment.type),
            ("EdgeIngest-Schema-Version", String(segment.schemaVersion)),
            ("EdgeIngest-Client", settings.clientID),
        ]
    }

    /// The records still waiting for this uploader's sink.
    private func queuedForSink() throws -> Int64 {
        try queue.sinkStatistics().first { $0.name == sinkName }?.queuedRecords ?? queue.statistics().queuedRecords
    }

    private func recordStored(_ count: Int) {
        state.update { $0.connected = true }
        storedSinceReset.store(true, ordering: .relaxed)
        recordLastUpload("stored \(count)")
    }

    /// After an acknowledgement: if uploads had failed or been held, says
    /// that they resumed, after how long, and how much is left.
    private func logRecovery() {
        guard let since = troubleSince.withLock({ $0.take() }) else { return }
        let waiting = try? queuedForSink()
        let trouble = monotonicMilliseconds() - since
        // The message groups digits for a person; the field is a plain number for tools.
        logger.notice(
            "Uploads resumed after \(LogText.duration(milliseconds: trouble)); \(waiting.map { LogText.grouped($0) } ?? "?") records waiting",
            metadata: [
                "ingest.trouble_ms": "\(trouble)", "ingest.queued": "\(waiting.map { String($0) } ?? "unknown")",
            ]
        )
    }

    /// Notes when uploading started to fail or was held, for the recovery
    /// message (the first failure of a streak counts).
    private func troubleStarted() {
        let now = monotonicMilliseconds()
        troubleSince.withLock { if $0 == nil { $0 = now } }
    }

    /// Shows a backoff in the state, and reports and logs it when due.
    private func announce(_ wait: LeaseDelivery.RetryWait) {
        troubleStarted()
        let until = wallClockMilliseconds() + Int64(wait.delayMilliseconds)
        state.update {
            $0.state = .backingOff
            $0.reason = wait.reason
            $0.until = until
        }
        recordLastUpload("failed: \(wait.reason)")
        if wait.isFirstOfStreak {
            hooks.reportError(EdgeIngestError(.uploadFailed, "Uploading failed and will be retried: \(wait.reason)."))
        }
        if wait.isWorthLogging {
            logger.warning(
                "Upload failed; retrying with backoff",
                metadata: [
                    "ingest.reason": "\(wait.reason)", "ingest.attempt": "\(wait.attempt)",
                    "ingest.retry_in_ms": "\(wait.delayMilliseconds)",
                ]
            )
        }
    }

    private func log(_ notices: [LeaseDelivery.Notice], of lease: QueueLease) {
        for notice in notices {
            switch notice {
            case .gaveUp(let records, let reason):
                logger.error(
                    "Giving up on a batch after the configured retries; its records move to the dead-letter table",
                    metadata: ["ingest.records": "\(records)", "ingest.reason": "\(reason)"]
                )
            case .recordRefused(let index, let reason):
                logger.error(
                    "A record was refused by the backend; moved to the dead-letter table",
                    metadata: ["ingest.record_id": "\(lease.recordIDs[index])", "ingest.reason": "\(reason)"]
                )
            case .batchTooLarge(let maxBytes):
                logger.notice(
                    "The backend refused a batch as too large; splitting it and lowering the batch size",
                    metadata: ["ingest.max_bytes": "\(maxBytes)"]
                )
            case .rejectedInStoredBatch(let count, let firstIndex, let reason):
                guard let suppressed = rejectionLogBudget.withLock({ $0.admit(count, now: monotonicMilliseconds()) })
                else { continue }
                var metadata: Logger.Metadata = [
                    "ingest.records": "\(count)",
                    "ingest.record_id": "\(lease.recordIDs[firstIndex])",
                    "ingest.reason": "\(reason)",
                ]
                if suppressed > 0 { metadata["ingest.not_logged_since"] = "\(suppressed)" }
                logger.warning(
                    "The backend stored a batch but refused some of its records; they moved to the dead-letter table",
                    metadata: metadata
                )
            }
        }
    }

    /// At most ``RejectionLogBudget/linesPerMinute`` lines a minute about
    /// records refused inside stored batches (the inputs' ``LogWindows``);
    /// the next line says how many went unlogged meanwhile (status and
    /// /metrics count every one).
    package struct RejectionLogBudget {
        package static let linesPerMinute = LogWindows.burst
        private var windows = LogWindows()

        package init() {}

        /// nil: do not log these `count` records; else log them, with the
        /// number of records not logged since the last line.
        package mutating func admit(_ count: Int, now milliseconds: Int64) -> Int? {
            let (log, ended) = windows.admit(
                "rejected in a stored batch",
                count: count,
                now: Double(milliseconds) / 1000
            )
            return log ? ended?.suppressed ?? 0 : nil
        }
    }

    /// What a released lease leads to: stopping, a hold, a wait for the
    /// user, or the owner's client reset.
    private func settle(_ release: LeaseDelivery.Release, credentialsError: EdgeIngestError?) -> LeaseResult {
        switch release {
        case .stopped:
            return .stopped
        case .hold(let reason):
            return holdFor(reason)
        case .waitForUser(let reason):
            return waitForUser(reason: reason, report: credentialsError)
        case .clientReset(let reason, let recoverable):
            state.update {
                $0.state = .clientReset
                $0.reason = reason
            }
            logger.error(
                "The backend demands a client reset",
                metadata: ["ingest.reason": "\(reason)", "ingest.recoverable": "\(recoverable)"]
            )
            let stored = storedSinceReset.exchange(false, ordering: .relaxed)
            if hooks.clientReset(reason, recoverable, stored) {
                state.update { $0.reason = nil }
                return .acknowledged  // the queue changed: take a fresh lease
            }
            return holdFor(
                "\(reason): the backend requires a client reset; waiting for it to be resolved (ingestd reset --recover or --discard)"
            )
        }
    }

    private func holdFor(_ reason: String) -> LeaseResult {
        troubleStarted()
        if state.snapshot.reason != reason {
            logger.error(
                "Uploading is held: everything stays queued until this is fixed",
                metadata: ["ingest.reason": "\(reason)"]
            )
            hooks.reportError(EdgeIngestError(.uploadHeld, "Uploading is held: \(reason)."))
        }
        state.update {
            $0.state = .error
            $0.reason = reason
        }
        recordLastUpload("held: \(reason)")
        return .held
    }

    private func waitForUser(reason: String, report: EdgeIngestError?) -> LeaseResult {
        troubleStarted()
        if state.snapshot.state != .waitingForUser {
            logger.error(
                "Uploading waits for the user to log in again; everything stays queued",
                metadata: ["ingest.reason": "\(reason)"]
            )
            hooks.reportError(
                report ?? EdgeIngestError(.authenticationFailed, "Uploading waits for a new login: \(reason).")
            )
        }
        state.update {
            $0.state = .waitingForUser
            $0.reason = reason
        }
        recordLastUpload("held: \(reason)")
        return .held
    }

    private func recordLastUpload(_ outcome: String) {
        let at = isoNow()
        state.update {
            $0.lastUploadAt = at
            $0.lastOutcome = outcome
        }
    }

    /// Waits for a wake-up (new readings from a committer, or a
    /// ``resume()``), the stop signal, or `milliseconds`.
    private func waitForWork(wake: WakeSignal, stop: StopSignal, milliseconds: Int) -> Readiness {
        state.expectProgress(within: milliseconds)
        let result = Readiness.wait(fd: wake.readFD, stop: stop, timeoutMs: Int32(max(1, milliseconds)))
        if case .readable = result { wake.drain() }
        return result
    }

    /// Sleeps for a backoff, waking early only to stop.
    private func sleep(stop: StopSignal, milliseconds: Int) -> Readiness {
        state.expectProgress(within: milliseconds)
        return Readiness.wait(fd: -1, stop: stop, timeoutMs: Int32(max(1, milliseconds)))
    }
}
