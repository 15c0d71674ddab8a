import EdgeIngestCore

/// What `ingestd status --json` prints: the agent's observable state (the
/// seeds' AsyncOpen states) and every counter. Written by the running agent
/// to `<state_directory>/status.json`.
package struct AgentStatus: Codable, Sendable, Equatable {
    /// The uploader's state — idle, uploading, backing_off, waiting_for_user,
    /// client_reset, error — or stopped (written at exit). See `openState`
    /// for the AsyncOpen view of it.
    package var state: AgentState
    package var pid: Int32
    package var updatedAt: String
    /// The seeds' AsyncOpen state of the agent's queue and session:
    /// `connecting` (not yet through to the backend since start),
    /// `waiting_for_user` (the backend refused the login), `open`, or
    /// `error` (uploading held: see `problem`).
    package var openState: String = "open"
    package var queuedRecords: Int64
    package var queuedBytes: Int64
    package var oldestAgeSeconds: Double?
    package var acceptedTotal: Int64
    package var rejectedTotal: Int64
    package var rejectedByReason: [String: Int64]
    package var uploadedTotal: Int64
    package var droppedTotal: Int64
    package var droppedByReason: [String: Int64]
    package var lastUpload: LastUpload?
    package var inputs: [InputCounters.Snapshot]
    package var problem: String?
    /// Records the backend refused one by one, kept in the dead-letter table.
    package var deadLetterRecords: Int64
    /// Records found damaged in the queue file and quarantined instead of
    /// sent (docs/QUEUE.md "Integrity"); nil in a status file written
    /// before there was a quarantine.
    package var quarantinedRecords: Int64?
    /// Why the uploader is backing off or held.
    package var uploadReason: String?
    /// While backing off: when the next attempt is due (ISO 8601).
    package var backingOffUntil: String?
    package var uploadRequests: Int64?
    /// Batches sent again after a failure.
    package var uploadResends: Int64?
    /// Records the sink's backend already had and dropped by its own
    /// deduplication (JetStream's PubAck `duplicate`): re-sends made harmless.
    package var uploadDuplicatesDropped: Int64?
    /// Records re-sent later than the backend's deduplication window
    /// (JetStream's duplicate window): they may be stored twice.
    package var uploadPotentialDuplicates: Int64?
    /// HTTP inputs: received records not stored because their `_id` had
    /// been received before (clients re-sending batches), since the queue
    /// was created.
    package var receivedDuplicatesTotal: Int64?
    /// HTTP inputs: received records refused because their `_id` had been
    /// received before with other content (answered `duplicate_id`), since
    /// the queue was created.
    package var receivedConflictsTotal: Int64?
    /// When a repair deleted damaged rows of the gateway's received ids or
    /// client sessions (ISO 8601), or nil: re-sends of batches received
    /// before then may be stored twice within the deduplication window.
    package var gatewayMemoryForgottenAt: String?
    /// How long the sink took to answer each request since the start.
    package var uploadLatency: UploadLatency?
    /// The longest the running agent goes without rewriting the status
    /// file: `ingestd status` calls an older file stale.
    package var refreshMilliseconds: Int64?
    /// Why the last reload (SIGHUP, `systemctl reload`) was refused, with
    /// its time, while the agent runs on its previous configuration; nil
    /// once a reload succeeded or the agent restarted.
    package var reloadRefused: String?
    /// The wall clock (``ClockWatch``): `synchronised`, `unsynchronised` or
    /// `unknown`; nil in a file written before the agent watched it.
    package var clock: String?
    /// How long the clock has been so, in seconds: since boot when
    /// ``clockSinceBoot``, else since the agent saw it change.
    package var clockForSeconds: Int64?
    /// Whether ``clock`` has been so since boot (as far as the agent knows:
    /// it found it so when it started).
    package var clockSinceBoot = false
    /// Jumps of the wall clock seen since the agent started (a second or more at once).
    package var clockJumpsTotal: Int64?
    /// The last jump's size, ms (negative: backwards).
    package var clockLastJumpMilliseconds: Int64?
    /// Each sink's numbers, when the agent has several (``SinkSnapshot``).
    package var sinks: [SinkSnapshot]?

    package struct LastUpload: Codable, Sendable, Equatable {
        package var at: String
        package var outcome: String
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case state, pid, inputs, problem
        case updatedAt = "updated_at"
        case openState = "open_state"
        case queuedRecords = "queued_records"
        case queuedBytes = "queued_bytes"
        case oldestAgeSeconds = "oldest_age_seconds"
        case acceptedTotal = "accepted_total"
        case rejectedTotal = "rejected_total"
        case rejectedByReason = "rejected_by_reason"
        case uploadedTotal = "uploaded_total"
        case droppedTotal = "dropped_total"
        case droppedByReason = "dropped_by_reason"
        case lastUpload = "last_upload"
        case deadLetterRecords = "dead_letter_records"
        case quarantinedRecords = "quarantined_records"
        case uploadReason = "upload_reason"
        case backingOffUntil = "backing_off_until"
        case uploadRequests = "upload_requests"
        case uploadResends = "upload_resends"
        case uploadDuplicatesDropped = "upload_duplicates_dropped"
        case uploadPotentialDuplicates = "upload_potential_duplicates"
        case receivedDuplicatesTotal = "received_duplicates_total"
        case receivedConflictsTotal = "received_conflicts_total"
        case gatewayMemoryForgottenAt = "gateway_memory_forgotten_at"
        case uploadLatency = "upload_latency"
        case refreshMilliseconds = "refresh_ms"
        case reloadRefused = "reload_refused"
        case clock
        case clockForSeconds = "clock_for_s"
        case clockSinceBoot = "clock_since_boot"
        case clockJumpsTotal = "clock_jumps_total"
        case clockLastJumpMilliseconds = "clock_last_jump_ms"
        case sinks
    }

    /// Builds the status from the queue's persistent counters and the inputs' live ones.
    package init(
        state: AgentState,
        statistics: QueueStatistics,
        inputs: [InputCounters.Snapshot],
        pid: Int32,
        problem: String? = nil
    ) {
        self.state = state
        self.pid = pid
        updatedAt = isoNow()
        queuedRecords = statistics.queuedRecords
        queuedBytes = statistics.queuedBytes
        oldestAgeSeconds = statistics.oldestAgeMilliseconds.map { Double($0) / 1000 }
        acceptedTotal = statistics.appendedTotal
        var rejected: [String: Int64] = [:]
        for (name, value) in statistics.counters where name.hasPrefix("rejected.") {
            rejected[String(name.dropFirst("rejected.".count))] = value
        }
        rejectedByReason = rejected
        receivedDuplicatesTotal = statistics.counters["received.duplicates"]
        receivedConflictsTotal = statistics.counters["received.conflicts"]
        gatewayMemoryForgottenAt = statistics.gatewayMemoryForgottenAt.map(isoTime(milliseconds:))
        rejectedTotal = rejected.values.reduce(0, +)
        uploadedTotal = statistics.acknowledgedTotal
        droppedByReason = statistics.droppedByReason
        droppedTotal = statistics.droppedTotal
        lastUpload = nil
        deadLetterRecords = statistics.deadLetterRecords
        quarantinedRecords = statistics.quarantinedRecords
        self.inputs = inputs
        self.problem = problem
    }

    /// The status as JSON, members sorted by name (what `status.json`
    /// holds and `ingestd status --json` prints).
    package func json(pretty: Bool = true) -> String {
        jsonValue.text(pretty: pretty)
    }

    /// Reads what ``json(pretty:)`` wrote.
    package static func decode(_ text: String) throws -> AgentStatus {
        let value: JSONValue
        do {
            value = try JSONValue.parse(Array(text.utf8))
        } catch {
            throw StatusFileError(reason: "\(error)")
        }
        return try AgentStatus(json: value)
    }

    /// ``oldestAgeSeconds`` in whole seconds, clamped to Int64 (a damaged
    /// status file can hold any number).
    package var oldestAgeWholeSeconds: Int64? {
        guard let age = oldestAgeSeconds, !age.isNaN else { return nil }
        return Int64(exactly: age.rounded(.towardZero)) ?? (age < 0 ? .min : .max)
    }

    /// The one line systemd shows in `systemctl status`.
    package var summary: String {
        var parts = ["\(state)", "\(queuedRecords) queued"]
        if let age = oldestAgeWholeSeconds { parts.append("oldest \(age)s") }
        parts.append("\(acceptedTotal) accepted")
        if rejectedTotal > 0 { parts.append("\(rejectedTotal) rejected") }
        if uploadedTotal > 0 { parts.append("\(uploadedTotal) uploaded") }
        if droppedTotal > 0 { parts.append("\(droppedTotal) dropped") }
        if let reason = uploadReason { parts.append(reason) }
        if reloadRefused != nil { parts.append("reload refused: runs on the previous configuration") }
        return parts.joined(separator: ", ")
    }
}

extension AgentStatus {
    /// The AsyncOpen state the uploader's state amounts to.
    static func openState(upload: UploadState.Snapshot) -> String {
        switch upload.state {
        case .waitingForUser: return "waiting_for_user"
        case .error, .clientReset: return "error"
        case .backingOff, .uploading: return upload.connected ? "open" : "connecting"
        default: return "open"
        }
    }
}
