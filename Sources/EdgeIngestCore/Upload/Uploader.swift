import Logging
import Synchronization

/// Streams queued records to the backend and deletes them only once the
/// backend confirmed them (docs/PROTOCOL.md). Shared by the agent's upload
/// service and ``IngestRealm``'s background upload.
///
/// One request per lease of one record type. The lease id (first `_id` and
/// count) is the `Idempotency-Key`, stable across retries and restarts.
/// Transient failures retry with capped, jittered backoff (forever by
/// default); a batch refused as bad is bisected until the poison records are
/// isolated and moved to the dead-letter table; 413 splits the batch and
/// lowers the size; a 401 refreshes the credentials once, then waits for
/// the user; a client reset is handed to the owner; configuration errors
/// hold the queue untouched.
package final class Uploader: Sendable {
    package let queue: DurableQueue
    package let settings: UploadSettings
    package let state: UploadState
    package let hooks: UploadHooks
    let logger: Logger
    let userAgent: String
    private let resumeGeneration = Atomic<UInt64>(0)
    /// Written by ``resume()`` so a hold wakes at once instead of polling.
    private let resumeSignal = StopSignal()
    /// How long an idle uploader (empty queue) waits before looking at the
    /// queue again when no commit woke it: commits always wake it, so this
    /// is only a safety net, kept rare so an idle agent sleeps.
    static let idleRecheckMilliseconds = 10_000
    /// Whether a batch was stored since the last client-reset demand.
    private let storedSinceReset = Atomic<Bool>(true)
    /// Builds the sink on the upload thread; nil: the ingest protocol to
    /// `settings.http.url`.
    let makeSink: SinkFactory?

    package init(
        queue: DurableQueue, settings: UploadSettings, state: UploadState, hooks: UploadHooks, userAgent: String, logger: Logger,
        sink: SinkFactory? = nil
    ) {
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
        resumeSignal.stop()
    }

    /// Why processing a lease ended.
    enum LeaseResult { case acknowledged, stopped, held }

    /// Uploads until `stop` fires, then drains for at most the shutdown
    /// timeout. Blocking: run it on its own thread. `wake` is signalled by
    /// producers after each commit.
    package func run(stop: StopSignal, wake: StopSignal) throws {
        let sink = try makeSink?() ?? IngestProtocolSink(settings: settings.http, userAgent: userAgent)
        var maxBytes = settings.maxBytes
        logger.info("Uploading to the sink", metadata: ["ingest.sink": "\(sink)"])
        while !stop.isStopped {
            state.expectProgress(within: 0)
            guard let lease = try queue.take(maxRecords: settings.maxRecords, maxBytes: maxBytes, singleType: true) else {
                state.update {
                    $0.state = "idle"
                    $0.reason = nil
                }
                _ = waitForWork(wake: wake, stop: stop, milliseconds: Self.idleRecheckMilliseconds)
                continue
            }
            // Linger: a partial batch waits a little for more readings.
            let age = wallClockMilliseconds() - (lease.segments.first?.enqueuedAt ?? 0)
            if lease.recordCount < settings.maxRecords, lease.payload.count < maxBytes / 2, age < settings.lingerMilliseconds {
                try queue.release(lease)
                _ = waitForWork(wake: wake, stop: stop, milliseconds: Int(Int64(settings.lingerMilliseconds) - age))
                continue
            }
            // Read before sending: a resume() that comes while this batch
            // is being refused still ends the hold it leads to.
            let generation = resumeGeneration.load(ordering: .sequentiallyConsistent)
            switch try process(lease, sink: sink, maxBytes: &maxBytes, stop: stop, deadline: nil) {
            case .acknowledged: continue
            case .stopped: break
            case .held: hold(stop: stop, since: generation)
            }
        }
        try finalDrain(sink: sink, maxBytes: &maxBytes)
    }

    /// On shutdown: upload what is queued until it is empty or the
    /// shutdown timeout passes; no retries. What is left stays queued.
    private func finalDrain(sink: any BatchSink, maxBytes: inout Int) throws {
        let deadline = monotonicSeconds() + Double(settings.shutdownTimeoutMilliseconds) / 1000
        let never = StopSignal()
        while monotonicSeconds() < deadline, state.snapshot.state != "error", state.snapshot.state != "waiting_for_user",
            let lease = try queue.take(maxRecords: settings.maxRecords, maxBytes: maxBytes, singleType: true)
        {
            guard try process(lease, sink: sink, maxBytes: &maxBytes, stop: never, deadline: deadline) == .acknowledged else { break }
        }
        let left = (try? queue.statistics().queuedRecords) ?? 0
        logger.info("Uploader stopped", metadata: ["ingest.queued": "\(left)"])
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

    /// Sends one lease, bisecting and retrying as the answers require, and
    /// acknowledges it when every part is stored or dead-lettered.
    private func process(_ lease: QueueLease, sink: any BatchSink, maxBytes: inout Int, stop: StopSignal, deadline: Double?) throws -> LeaseResult {
        let segment = lease.segments[0]
        var work: [Range<Int>] = [0..<lease.recordCount]
        var deadLetters: [Int: String] = [:]
        var attempt = 0
        var refreshed = false
        var reported = false
        while let range = work.first {
            if stop.isStopped || deadline.map({ monotonicSeconds() > $0 }) == true {
                try queue.release(lease)
                return .stopped
            }
            let whole = range == 0..<lease.recordCount
            let key = whole ? lease.id : "\(lease.id):\(range.lowerBound)+\(range.count)"
            var headers = [
                ("Content-Type", "application/x-ndjson"),
                ("Idempotency-Key", key),
                ("EdgeIngest-Protocol", "1"),
                ("EdgeIngest-Record-Type", segment.type),
                ("EdgeIngest-Schema-Version", String(segment.schemaVersion)),
                ("EdgeIngest-Client", settings.clientID),
            ]
            var credentialsOffline: String?
            do {
                headers += try hooks.requestHeaders()
            } catch let error as EdgeIngestError where error.code == .offline {
                credentialsOffline = error.message  // a login or refresh that could not reach the backend: passing
            } catch {
                try queue.release(lease)
                return waitForUser(reason: "\(error)", report: error as? EdgeIngestError)
            }
            state.update {
                $0.state = "uploading"
                $0.requests += 1
                if attempt > 0 { $0.resends += 1 }
            }
            state.expectProgress(
                within: sink.deliveryTimeLimitMilliseconds ?? settings.http.connectTimeoutMilliseconds + settings.http.timeoutMilliseconds)
            let outcome: UploadOutcome
            if let credentialsOffline {
                outcome = .retry(reason: credentialsOffline, retryAfterSeconds: nil)
            } else {
                outcome = sink.deliver(
                    SinkBatch(
                        type: segment.type, idempotencyKey: key,
                        payload: lease.payload(records: range), recordCount: range.count, headers: headers
                    )
                )
            }
            // The final drain at shutdown takes only clean successes: no retries, no bisection.
            if deadline != nil, !outcome.isStored {
                try queue.release(lease)
                return .stopped
            }
            switch outcome {
            case .stored(let rejected):
                for r in rejected { deadLetters[range.lowerBound + r.index] = "rejected by the sink: \(r.reason)" }
                work.removeFirst()
                attempt = 0
                reported = false
                state.update { $0.connected = true }
                storedSinceReset.store(true, ordering: .relaxed)
                recordLastUpload("stored \(range.count)")
            case .retry(let reason, let retryAfter):
                if settings.maxRetries > 0, attempt >= settings.maxRetries {
                    logger.error(
                        "Giving up on a batch after the configured retries; its records move to the dead-letter table",
                        metadata: ["ingest.records": "\(range.count)", "ingest.reason": "\(reason)"]
                    )
                    for i in range { deadLetters[i] = "retries exhausted: \(reason)" }
                    work.removeFirst()
                    attempt = 0
                    continue
                }
                let delay = settings.backoff.delay(attempt: attempt, retryAfterSeconds: retryAfter, unit: Double.random(in: 0..<1))
                attempt += 1
                let until = wallClockMilliseconds() + Int64(delay * 1000)
                state.update {
                    $0.state = "backing_off"
                    $0.reason = reason
                    $0.until = until
                }
                recordLastUpload("failed: \(reason)")
                if !reported {
                    hooks.reportError(EdgeIngestError(.uploadFailed, "Uploading failed and will be retried: \(reason)."))
                    reported = true
                }
                if attempt == 1 || attempt % 10 == 0 {
                    logger.warning(
                        "Upload failed; retrying with backoff",
                        metadata: ["ingest.reason": "\(reason)", "ingest.attempt": "\(attempt)", "ingest.retry_in_ms": "\(Int(delay * 1000))"]
                    )
                }
                if case .stopped = sleep(stop: stop, milliseconds: Int(delay * 1000)) {
                    try queue.release(lease)
                    return .stopped
                }
            case .badBatch(let reason):
                work.removeFirst()
                if range.count == 1 {
                    deadLetters[range.lowerBound] = "refused by the backend: \(reason)"
                    logger.error(
                        "A record was refused by the backend; moved to the dead-letter table",
                        metadata: ["ingest.record_id": "\(lease.recordIDs[range.lowerBound])", "ingest.reason": "\(reason)"]
                    )
                } else {
                    let mid = range.lowerBound + range.count / 2
                    work.insert(contentsOf: [range.lowerBound..<mid, mid..<range.upperBound], at: 0)
                }
                attempt = 0
            case .tooLarge:
                work.removeFirst()
                let bytes = lease.payload(records: range).count
                maxBytes = max(4096, min(maxBytes, bytes / 2))
                if range.count == 1 {
                    deadLetters[range.lowerBound] = "larger than the backend accepts (HTTP 413)"
                } else {
                    let mid = range.lowerBound + range.count / 2
                    work.insert(contentsOf: [range.lowerBound..<mid, mid..<range.upperBound], at: 0)
                }
                logger.notice("The backend refused a batch as too large; splitting it and lowering the batch size", metadata: ["ingest.max_bytes": "\(maxBytes)"])
            case .unauthorized:
                // Refresh once per batch; a second 401 waits for the user.
                if !refreshed, hooks.refreshCredentials() {
                    refreshed = true
                    logger.notice("The backend refused the access token; refreshed it and sending again")
                    continue
                }
                try queue.release(lease)
                return waitForUser(
                    reason: "HTTP 401: the backend refused the credentials (log in again, or check the upload token)",
                    report: nil
                )
            case .clientReset(let reason, let recoverable):
                try queue.release(lease)
                state.update {
                    $0.state = "client_reset"
                    $0.reason = reason
                }
                logger.error("The backend demands a client reset", metadata: ["ingest.reason": "\(reason)", "ingest.recoverable": "\(recoverable)"])
                let stored = storedSinceReset.exchange(false, ordering: .relaxed)
                if hooks.clientReset(reason, recoverable, stored) {
                    state.update { $0.reason = nil }
                    return .acknowledged  // the queue changed: take a fresh lease
                }
                return holdFor("\(reason): the backend requires a client reset; waiting for it to be resolved (ingestd reset --recover or --discard)")
            case .hold(let reason):
                try queue.release(lease)
                return holdFor(reason)
            }
        }
        state.expectProgress(within: 0)
        try queue.acknowledge(lease, deadLetters: deadLetters)
        state.update {
            $0.reason = nil
            $0.until = nil
        }
        return .acknowledged
    }

    private func holdFor(_ reason: String) -> LeaseResult {
        if state.snapshot.reason != reason {
            logger.error("Uploading is held: everything stays queued until this is fixed", metadata: ["ingest.reason": "\(reason)"])
            hooks.reportError(EdgeIngestError(.uploadHeld, "Uploading is held: \(reason)."))
        }
        state.update {
            $0.state = "error"
            $0.reason = reason
        }
        recordLastUpload("held: \(reason)")
        return .held
    }

    private func waitForUser(reason: String, report: EdgeIngestError?) -> LeaseResult {
        if state.snapshot.state != "waiting_for_user" {
            logger.error("Uploading waits for the user to log in again; everything stays queued", metadata: ["ingest.reason": "\(reason)"])
            hooks.reportError(report ?? EdgeIngestError(.authenticationFailed, "Uploading waits for a new login: \(reason)."))
        }
        state.update {
            $0.state = "waiting_for_user"
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
    private func waitForWork(wake: StopSignal, stop: StopSignal, milliseconds: Int) -> Readiness {
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
