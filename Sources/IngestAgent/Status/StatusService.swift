import EdgeIngestCore
import Logging
import ServiceLifecycle
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Keeps the agent observable: rewrites the status file, keeps systemd's
/// STATUS= line current, pings the watchdog while the pipeline is healthy,
/// and logs a stats entry with every counter at `statsInterval`.
///
/// READY=1 is sent when this service starts, which the agent does after the
/// queue is open and the inputs run; STOPPING=1 on graceful shutdown.
struct StatusService: Service {
    let queue: DurableQueue
    let inputs: [InputCounters]
    var upload: UploadState? = nil
    /// With several sinks, each one's uploader state by name (the first
    /// is ``upload``'s): the status lists them, and any in trouble is the
    /// agent's problem.
    var sinks: [(name: String, state: UploadState)] = []
    let statusPath: String
    let notifier: SystemdNotifier
    let statusIntervalMilliseconds: Int
    let statsIntervalSeconds: Int
    let logger: Logger
    /// Set when the agent may reload: its shutdown then is a reload's, not a stop's.
    var reload: Reload? = nil
    /// Delivery is a problem once the oldest queued reading is older than
    /// this (with uploads; 0: never by age), and the key that set it.
    var unhealthyAfter: (seconds: Int64, key: String) = (300, "upload.unhealthy_after_s")
    /// Whether the last status write failed (logged once per streak).
    private let writeFailing = WriteFailures()
    /// The wall clock's synchronisation and jumps, looked at every round.
    var clockWatch = ClockWatch()

    func run() async throws {
        notifier.ready()
        logger.info(
            "ingestd is ready",
            metadata: ["ingest.queue": "\(queue.configuration.location)", "ingest.inputs": "\(inputs.count)"]
        )
        let busyPeriod = min(statusIntervalMilliseconds, notifier.watchdogPingMilliseconds ?? .max)
        let idlePeriod = min(
            max(statusIntervalMilliseconds, Self.idlePeriodMilliseconds),
            notifier.watchdogPingMilliseconds ?? .max
        )
        var lastStats = monotonicSeconds()
        var lastActivity: Activity? = nil
        var quietRounds = 0
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            watchClock()
            let status = liveStatus()
            writeStatus(status)
            notifier.status(status.summary)
            // Nothing moved for a while: the agent is idle and this loop
            // slows down, so an idle agent wakes rarely.
            let activity = Activity(status)
            quietRounds = activity == lastActivity ? quietRounds + 1 : 0
            lastActivity = activity
            let period = quietRounds * busyPeriod >= Self.quietBeforeIdleMilliseconds ? idlePeriod : busyPeriod
            if let reason = wedgedReason() {
                logger.error(
                    "Pipeline is not making progress; withholding the watchdog ping",
                    metadata: ["ingest.reason": "\(reason)"]
                )
            } else {
                notifier.watchdog()
            }
            if statsIntervalSeconds > 0, monotonicSeconds() - lastStats >= Double(statsIntervalSeconds) {
                logStats(status)
                lastStats = monotonicSeconds()
            }
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(period)) }
            } catch {
                break
            }
        }
        // A reload says RELOADING=1 instead, and READY=1 when the agent runs again.
        if reload?.acceptedConfiguration == nil { notifier.stopping() }
    }

    /// Looks at the clock and logs what changed. When it became
    /// synchronised, the queue records this boot's offset at once, so
    /// readings accepted before leave corrected (and held ones go).
    func watchClock() {
        for change in clockWatch.look() {
            switch change {
            // A box that starts before NTP answers is the usual case, not a
            // fault: a notice (a start logs nothing at warning level). A
            // clock that stops being synchronised is one.
            case .startedUnsynchronised: logger.notice("\(change)")
            case .lost: logger.warning("\(change)")
            case .synchronised:
                logger.notice("\(change)")
                do {
                    try queue.recordClockOffsetIfSynchronised()
                } catch {
                    logger.warning(
                        "Could not record the clock's offset in the queue; the next commit records it",
                        metadata: ["error": "\(error)"]
                    )
                }
            case .startedUnknown, .jumped: logger.notice("\(change)")
            }
        }
    }

    /// The status file's cadence while nothing changes (capped by the
    /// watchdog's ping interval): `ingestd status` may then show counters up
    /// to this old, which is harmless as none moved.
    static let idlePeriodMilliseconds = 5_000
    /// How long nothing must move before the slower cadence starts: the
    /// first seconds after a change keep the status file fresh.
    static let quietBeforeIdleMilliseconds = 10_000

    /// What tells a busy agent from an idle one between two rounds: the
    /// whole status but for what moves with the clock alone.
    struct Activity: Equatable {
        var status: AgentStatus

        init(_ status: AgentStatus) {
            var still = status
            still.updatedAt = ""
            still.oldestAgeSeconds = nil
            still.clockForSeconds = nil
            for i in still.inputs.indices { still.inputs[i].heartbeatAt = 0 }
            self.status = still
        }
    }

    /// Writes the final status at exit (state "stopped").
    func writeFinalStatus() {
        let status = currentStatus(state: .stopped)
        writeStatus(status)
        logStats(status)
    }

    /// The running agent's status now (what status.json gets next).
    func liveStatus() -> AgentStatus { currentStatus(state: AgentState(upload?.snapshot.state ?? .idle)) }

    func currentStatus(state: AgentState) -> AgentStatus {
        do {
            let statistics = try queue.statistics()
            var status = AgentStatus(
                state: state,
                statistics: statistics,
                inputs: inputs.map(\.snapshot),
                pid: getpid(),
                problem: unhealthyReason()
            )
            let watched = clockWatch.snapshot
            status.clock = watched.state.rawValue
            status.clockForSeconds = (bootTimeMilliseconds() - watched.since) / 1_000
            status.clockSinceBoot = watched.since == 0
            status.clockJumpsTotal = watched.jumps
            status.clockLastJumpMilliseconds = watched.lastJump?.milliseconds
            if sinks.count > 1 {
                let numbers = try queue.sinkStatistics()
                status.sinks = sinks.map { sink in
                    numbers.first { $0.name == sink.name }.map {
                        SinkSnapshot(statistics: $0, upload: sink.state.snapshot)
                    }
                        ?? SinkSnapshot(name: sink.name)
                }
                if status.problem == nil, let troubled = status.sinks?.dropFirst().first(where: { $0.state == "error" })
                {
                    status.problem = "sink '\(troubled.name)': \(troubled.reason ?? "failed")"
                }
            }
            if let upload = upload?.snapshot {
                if let at = upload.lastUploadAt { status.lastUpload = .init(at: at, outcome: upload.lastOutcome ?? "") }
                status.uploadReason = upload.reason
                if upload.state == .backingOff, let until = upload.until {
                    status.backingOffUntil = isoTime(milliseconds: until)
                }
                status.uploadRequests = upload.requests
                status.uploadResends = upload.resends
                status.uploadDuplicatesDropped = upload.duplicatesDropped
                status.uploadPotentialDuplicates = upload.potentialDuplicates
                status.uploadLatency = upload.latency
                if status.problem == nil, upload.state == .error { status.problem = upload.reason }
                status.openState = AgentStatus.openState(upload: upload)
                if status.problem == nil { status.problem = deliveryProblem(status) }
            }
            status.refreshMilliseconds = Int64(refreshMilliseconds)
            if let refusal = reload?.refusal {
                status.reloadRefused = refusal
                if status.problem == nil {
                    status.problem =
                        "the last reload was refused (the configuration has problems; ingestd runs on the previous one): fix it and reload again"
                }
            }
            return status
        } catch {
            return AgentStatus(
                state: .error,
                statistics: .empty,
                inputs: inputs.map(\.snapshot),
                pid: getpid(),
                problem: "\(error)"
            )
        }
    }

    /// Why readings are not being delivered, if they are not: uploads held
    /// (waiting for the user, refused), or a backlog older than the bound.
    func deliveryProblem(_ status: AgentStatus) -> String? {
        if status.state == .waitingForUser || status.state == .clientReset {
            return "uploads are held: \(status.uploadReason ?? status.state.rawValue)"
        }
        guard unhealthyAfter.seconds > 0, let age = status.oldestAgeWholeSeconds, age > unhealthyAfter.seconds
        else { return nil }
        var why = status.uploadReason.map { ": \($0)" } ?? ""
        // With several sinks: the ones holding readings back, by name.
        let stuck = (status.sinks ?? []).filter { $0.queuedRecords > 0 && !["idle", "uploading"].contains($0.state) }
        if !stuck.isEmpty {
            why =
                ": "
                + stuck.map {
                    "sink '\($0.name)' \($0.state), \($0.queuedRecords) waiting" + ($0.reason.map { ": \($0)" } ?? "")
                }
                .joined(separator: "; ")
        }
        if why.isEmpty, status.clock != "synchronised",
            queue.configuration.acceptanceStamps.values.contains(where: \.holdUnsynchronised)
        {
            why = ": readings of types with hold_unsynchronised wait for the clock to be synchronised"
        }
        return
            "the oldest queued reading is \(age) s old (\(unhealthyAfter.key) = \(unhealthyAfter.seconds))\(why)"
    }

    /// The longest the status file goes without being rewritten while the
    /// agent runs (the idle cadence, capped by the watchdog's): `status`
    /// calls a file older than about twice this stale.
    var refreshMilliseconds: Int {
        min(max(statusIntervalMilliseconds, Self.idlePeriodMilliseconds), notifier.watchdogPingMilliseconds ?? .max)
    }

    /// What `status` reports as the problem: a wedged input, or one that
    /// cannot make progress for a known reason (a full disk). Only the first
    /// withholds the watchdog ping: waiting for disk space is not a hang,
    /// and a restart would not fix it.
    func unhealthyReason() -> String? {
        if let wedged = wedgedReason() { return wedged }
        for input in inputs.map(\.snapshot) {
            if let problem = input.problem { return "input '\(input.name)': \(problem)" }
            if input.disconnected {
                return "input '\(input.name)': its device is gone (unplugged?); the agent reopens it by itself"
            }
        }
        return nil
    }

    /// An input that has neither read, idled nor waited for the queue
    /// within the watchdog interval is wedged; so is an uploader past the
    /// deadline it promised for its current step.
    func wedgedReason() -> String? {
        let limitMs = Int64(notifier.watchdogMicroseconds.map { $0 / 1000 } ?? 30_000)
        let now = monotonicMilliseconds()
        let uploaders = sinks.count > 1 ? sinks : upload.map { [(QueueRouting.defaultSinkName, $0)] } ?? []
        for (name, state) in uploaders {
            let upload = state.snapshot
            guard now > upload.aliveUntil else { continue }
            let which = sinks.count > 1 ? "the uploader of sink '\(name)'" : "the uploader"
            return
                "\(which) has shown no progress for \((now - upload.aliveUntil + UploadState.graceMilliseconds) / 1000) s past its current step's limit"
        }
        for input in inputs.map(\.snapshot) where !input.finished && !input.waitingForSpace {
            if now - input.heartbeatAt > limitMs {
                return "input '\(input.name)' has shown no progress for \((now - input.heartbeatAt) / 1000) s"
            }
        }
        return nil
    }

    func writeStatus(_ status: AgentStatus) {
        let text = status.json()
        // Not durable: rewritten every second; a crash leaves the previous one.
        do {
            try writeFileAtomically(statusPath, Array((text + "\n").utf8), durable: false)
            writeFailing.failing.withLock { $0 = false }
        } catch {
            // `ingestd status` will call the old file stale; say why here, once.
            let wasFailing = writeFailing.failing.withLock { failing in
                defer { failing = true }
                return failing
            }
            guard !wasFailing else { return }
            logger.error(
                "Cannot write the status file; `ingestd status` will report the agent as not responding",
                metadata: ["ingest.status_file": "\(statusPath)", "error": "\(error)"]
            )
        }
    }

    func logStats(_ status: AgentStatus) {
        var metadata: Logger.Metadata = [
            "ingest.state": "\(status.state)",
            "ingest.queued": "\(status.queuedRecords)",
            "ingest.queued_bytes": "\(status.queuedBytes)",
            "ingest.accepted": "\(status.acceptedTotal)",
            "ingest.rejected": "\(status.rejectedTotal)",
            "ingest.uploaded": "\(status.uploadedTotal)",
            "ingest.dropped": "\(status.droppedTotal)",
        ]
        if let age = status.oldestAgeSeconds { metadata["ingest.oldest_age_seconds"] = "\(Int(age))" }
        for (reason, n) in status.rejectedByReason { metadata["ingest.rejected." + reason] = "\(n)" }
        for (reason, n) in status.droppedByReason { metadata["ingest.dropped." + reason] = "\(n)" }
        logger.info("Stats", metadata: metadata)
    }
}

/// Whether the status file's last write failed, shared by copies of the service.
private final class WriteFailures: Sendable {
    let failing = PlainMutex(false)
}
