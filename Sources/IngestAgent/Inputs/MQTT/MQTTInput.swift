import EdgeIngestCore
import Logging
import ServiceLifecycle

/// `kind = "mqtt"`: subscribes to topic filters on a broker and commits
/// each message's readings (one JSON reading, or NDJSON/CSV lines) to the
/// queue before acknowledging it (``MQTTInputSession``). The session is
/// persistent (clean start off, a session expiry), so the broker keeps
/// what is published while the agent is down or restarting, and sends
/// again what was not acknowledged: kill -9 loses nothing the broker
/// accepted. Readings sent again whose own `_id` was received within
/// `dedup_window_s` are left out durably and counted as duplicates, so a
/// redelivery after a crash stores nothing twice.
///
/// Reconnects with backoff and jitter (0.5 s doubling to 30 s); a broker
/// that refuses the credentials or the client is tried again every 60 s,
/// with one error in the journal, not a retry storm.
struct MQTTInput: Service {
    let context: InputContext
    let settings: MQTTInputSettings

    init(context: InputContext) {
        self.context = context
        settings = context.settings.mqtt ?? MQTTInputSettings(clientID: "ingestd")
    }

    private var logger: Logger { context.logger }
    private var metadata: Logger.Metadata {
        ["ingest.input": "\(context.settings.name)", "ingest.broker": "\(settings.url)"]
    }

    /// Reconnection delay after `attempt` failures in a row, with ±20 % jitter.
    static func backoffMilliseconds(attempt: Int) -> Int {
        let base = min(30_000, 500 << min(attempt, 6))
        return base * Int.random(in: 80...120) / 100
    }

    static let refusedRetryMilliseconds = 60_000

    func run() async throws {
        defer { context.counters.update { $0.finished = true } }
        try await runBlockingLoop { [self] stop in try connectionLoop(stop: stop) }
    }

    private func connectionLoop(stop: StopSignal) throws {
        // Readings with their own `_id` that the broker sends again after a
        // crash are left out durably (the same window as a gateway's).
        var receipt: Receipt?
        if settings.dedupWindowSeconds > 0 {
            receipt = Receipt(dedupWindowMilliseconds: settings.dedupWindowSeconds * 1000, session: nil)
            receipt?.skipsIDsGeneratedHere = true  // readings without `_id` cannot come again under one
        }
        var ingestor = context.makeIngestor(committer: context.makeCommitter(stop: stop, receipt: receipt))
        var attempt = 0
        var loggedProblem: String?
        /// Whether a session was established since the agent started (a new one later means the broker lost it).
        var hadSession = false
        while !stop.isStopped {
            let delay: Int
            do {
                let session = try MQTTInputSession(settings: settings, context: context, stop: stop)
                session.expectSession = hadSession
                defer { hadSession = hadSession || session.isConnected }
                let started = monotonicSeconds()
                defer {
                    // A connection that lasted resets the backoff.
                    if monotonicSeconds() - started > 10 { attempt = 0 }
                }
                try runSession(session, &ingestor, afterProblem: &loggedProblem)
                return  // stopped
            } catch .commitFailed(let error) {
                throw error
            } catch .refused(let reason) {
                report(reason, level: .error, &loggedProblem, hint: "retrying every 60 s")
                delay = Self.refusedRetryMilliseconds
            } catch .lost(let reason), .protocolViolation(let reason) {
                report(reason, level: .warning, &loggedProblem, hint: "reconnecting with backoff")
                delay = Self.backoffMilliseconds(attempt: attempt)
                attempt += 1
            }
            // The broker sends the unacknowledged messages again: what was read of them goes.
            try ingestor.discardPending()
            context.counters.heartbeat()
            let deadline = monotonicSeconds() + Double(delay) / 1000
            while monotonicSeconds() < deadline {
                let left = Int32((deadline - monotonicSeconds()) * 1000) + 1
                let step = min(left, context.waitMilliseconds(pending: false))
                if case .stopped = Readiness.wait(fd: -1, stop: stop, timeoutMs: step) { return }
                context.counters.heartbeat()
            }
        }
    }

    private func runSession(
        _ session: MQTTInputSession,
        _ ingestor: inout LineIngestor,
        afterProblem loggedProblem: inout String?
    ) throws(MQTTInputFailure) {
        // Connected at TCP (and TLS) level; CONNACK and SUBACK come inside run.
        context.counters.update {
            $0.disconnected = false
            $0.problem = nil
        }
        do {
            try session.run(&ingestor)
        } catch {
            // Connected in between: the next problem is news, and logged.
            if session.isConnected { loggedProblem = nil }
            context.counters.update { $0.disconnected = true }
            throw error
        }
    }

    /// Logs a connection problem once until it changes or the input connects again.
    private func report(_ reason: String, level: Logger.Level, _ loggedProblem: inout String?, hint: String) {
        context.counters.update {
            $0.disconnected = true
            $0.problem = "MQTT broker \(settings.url): \(reason)"
        }
        guard loggedProblem != reason else { return }
        loggedProblem = reason
        logger.log(
            level: level,
            "The MQTT broker cannot be used; \(hint)",
            metadata: metadata.merging(["error": "\(reason)"], uniquingKeysWith: { $1 })
        )
    }
}
