import EdgeIngestCore

/// A status file that cannot be read back: what is wrong with it.
package struct StatusFileError: Error, CustomStringConvertible {
    package let reason: String
    package var description: String { "the status file is not what ingestd writes: \(reason)" }
}

/// The status as JSON, with the member names of ``AgentStatus/CodingKeys``
/// (snake_case) and Swift's Codable names inside `inputs` and
/// `last_upload`: the same members and values Foundation's JSONEncoder
/// writes from the Codable conformance (a test compares them), without
/// linking Foundation. Both directions and `ingestd status`'s text follow
/// one table, ``fields``: a new member is a property, its coding key and
/// one entry there.
extension AgentStatus {
    typealias Field = JSONField<AgentStatus>

    /// Every member, in the order `ingestd status` shows them. The first
    /// member that is missing or wrong is the one a damaged file's error names.
    static let fields: [Field] = [
        Field(
            key: K.pid.stringValue,
            write: { .int(Int64($0.pid)) },
            read: { status, members in
                guard let pid = Int32(exactly: try members.int(K.pid.stringValue)), pid > 0 else {
                    throw StatusFileError(reason: "'pid' in the status should be a process id (1 or more)")
                }
                status.pid = pid
            }
        ),
        Field(
            key: K.state.stringValue,
            write: { .string($0.state.rawValue) },
            read: { $0.state = AgentState(rawValue: try $1.string(K.state.stringValue)) },
            metrics: [
                MetricFamily(
                    name: "ingestd_state",
                    kind: .gauge,
                    help: "1 for the agent's current state (the uploader's phase, or stopped); 0 for the others."
                ) { s in
                    let listed = AgentState.listed
                    return (listed.contains(s.state) ? listed : listed + [s.state]).map {
                        .init(labels: [("state", $0.rawValue)], value: $0 == s.state ? 1 : 0)
                    }
                }
            ]
        ),
        .string(K.updatedAt.stringValue, \.updatedAt),
        .string(K.openState.stringValue, \.openState, absent: "open"),
        .optionalString(K.problem.stringValue, \.problem, text: { $0.problem.map { "problem:  \($0)" } }),
        .int(K.queuedRecords.stringValue, \.queuedRecords) { s in
            "queued:   \(s.queuedRecords) records, \(s.queuedBytes) bytes"
                + (s.oldestAgeWholeSeconds.map { ", oldest \($0) s" } ?? "")
        }
        .exported("ingestd_queued_records", .gauge, help: "Readings in the queue, not yet confirmed by the sink."),
        .int(K.queuedBytes.stringValue, \.queuedBytes)
            .exported("ingestd_queued_bytes", .gauge, help: "Bytes of the readings in the queue (encoded records)."),
        .optionalDouble(K.oldestAgeSeconds.stringValue, \.oldestAgeSeconds)
            .exported("ingestd_oldest_queued_age_seconds", .gauge, help: "Age of the oldest queued reading."),
        .int(K.acceptedTotal.stringValue, \.acceptedTotal) { "accepted: \($0.acceptedTotal)" }
            .exported(
                "ingestd_accepted_records_total",
                .counter,
                help: "Readings validated and committed to the queue."
            ),
        .int(K.rejectedTotal.stringValue, \.rejectedTotal) {
            "rejected: \($0.rejectedTotal)" + reasons($0.rejectedByReason)
        },
        .counts(K.rejectedByReason.stringValue, \.rejectedByReason)
            .exported(
                "ingestd_rejected_records_total",
                .counter,
                help: "Input lines refused, by reason.",
                label: "reason"
            ),
        .int(K.uploadedTotal.stringValue, \.uploadedTotal) { "uploaded: \($0.uploadedTotal)" }
            .exported(
                "ingestd_uploaded_records_total",
                .counter,
                help: "Readings the sink confirmed, deleted from the queue."
            ),
        .int(K.droppedTotal.stringValue, \.droppedTotal) {
            "dropped:  \($0.droppedTotal)" + reasons($0.droppedByReason)
        },
        .counts(K.droppedByReason.stringValue, \.droppedByReason)
            .exported(
                "ingestd_dropped_records_total",
                .counter,
                help: "Readings dropped from the queue, by reason.",
                label: "reason"
            ),
        .int(K.deadLetterRecords.stringValue, \.deadLetterRecords) { s in
            s.deadLetterRecords == 0 ? nil : "dead letters: \(s.deadLetterRecords) (ingestd dead-letter list)"
        }
        .exported("ingestd_dead_letter_records", .gauge, help: "Records in the dead-letter table."),
        .optionalInt(K.quarantinedRecords.stringValue, \.quarantinedRecords) { s in
            s.quarantinedRecords.flatMap {
                $0 == 0 ? nil : "quarantined: \($0) damaged in the queue file, not sent (ingestd verify)"
            }
        }
        .exported(
            "ingestd_quarantined_records_total",
            .counter,
            help: "Readings found damaged in the queue file and quarantined instead of sent."
        ),
        .optionalInt(K.receivedDuplicatesTotal.stringValue, \.receivedDuplicatesTotal) { s in
            s.receivedDuplicatesTotal.flatMap { $0 == 0 ? nil : "duplicates: \($0) received again and not stored" }
        }
        .exported(
            "ingestd_received_duplicates_total",
            .counter,
            help: "Records an HTTP input received again (same _id) and did not store again."
        ),
        .optionalInt(K.receivedConflictsTotal.stringValue, \.receivedConflictsTotal) { s in
            s.receivedConflictsTotal.flatMap {
                $0 == 0 ? nil : "conflicts: \($0) received under a known _id with other content, refused (duplicate_id)"
            }
        }
        .exported(
            "ingestd_received_conflicts_total",
            .counter,
            help: "Records an HTTP input refused: their _id was received before with other content (duplicate_id)."
        ),
        .optionalString(K.gatewayMemoryForgottenAt.stringValue, \.gatewayMemoryForgottenAt) { s in
            s.gatewayMemoryForgottenAt.map {
                "received: ids or sessions lost to damage at \($0) (repair): a batch received before and sent again within the deduplication window may be stored twice"
            }
        },
        .optionalString(K.uploadReason.stringValue, \.uploadReason) { s in
            s.uploadReason.map { reason in
                "upload:   " + (s.backingOffUntil.map { "retrying at \($0) after: " } ?? "") + reason
            }
        },
        .optionalString(K.backingOffUntil.stringValue, \.backingOffUntil),
        .optionalInt(K.refreshMilliseconds.stringValue, \.refreshMilliseconds),
        Field(
            key: K.reloadRefused.stringValue,
            write: { $0.reloadRefused.map(JSONValue.string) },
            read: { $0.reloadRefused = try $1.optionalString(K.reloadRefused.stringValue) },
            text: { $0.reloadRefused.map { "reload:   refused \($0)" } },
            metrics: [
                MetricFamily(
                    name: "ingestd_reload_refused",
                    kind: .gauge,
                    help:
                        "1 while the last reload was refused (the configuration has problems) and the agent runs on the previous one."
                ) { [.init(labels: [], value: $0.reloadRefused == nil ? 0 : 1)] }
            ]
        ),
        Field(
            key: K.clock.stringValue,
            write: { $0.clock.map(JSONValue.string) },
            read: { $0.clock = try $1.optionalString(K.clock.stringValue) },
            text: { $0.clockLine },
            metrics: [
                MetricFamily(
                    name: "ingestd_clock_synchronised",
                    kind: .gauge,
                    help:
                        "1 while the wall clock is synchronised, 0 while it is not (absent when that cannot be known)."
                ) { s in
                    guard let clock = s.clock, clock != "unknown" else { return [] }
                    return [.init(labels: [], value: clock == "synchronised" ? 1 : 0)]
                }
            ]
        ),
        .optionalInt(K.clockForSeconds.stringValue, \.clockForSeconds),
        .bool(K.clockSinceBoot.stringValue, \.clockSinceBoot),
        .optionalInt(K.clockJumpsTotal.stringValue, \.clockJumpsTotal)
            .exported(
                "ingestd_clock_jumps_total",
                .counter,
                help: "Jumps of the wall clock (a second or more at once) seen since the agent started."
            ),
        .optionalInt(K.clockLastJumpMilliseconds.stringValue, \.clockLastJumpMilliseconds),
        .optionalInt(K.uploadRequests.stringValue, \.uploadRequests)
            .exported("ingestd_upload_requests_total", .counter, help: "Batches sent to the sink, re-sends included."),
        .optionalInt(K.uploadResends.stringValue, \.uploadResends)
            .exported(
                "ingestd_upload_resends_total",
                .counter,
                help: "Batches sent again after a failure (same _ids)."
            ),
        .optionalInt(K.uploadDuplicatesDropped.stringValue, \.uploadDuplicatesDropped) { s in
            s.uploadDuplicatesDropped.flatMap {
                $0 == 0 ? nil : "re-sent:  \($0) the backend already had, dropped by its deduplication"
            }
        }
        .exported(
            "ingestd_upload_duplicates_dropped_total",
            .counter,
            help: "Records the backend already had and dropped by its own deduplication (JetStream)."
        ),
        .optionalInt(K.uploadPotentialDuplicates.stringValue, \.uploadPotentialDuplicates) { s in
            s.uploadPotentialDuplicates.flatMap {
                $0 == 0
                    ? nil
                    : "re-sent late: \($0) after the backend's duplicate window: they may be stored twice (see the journal)"
            }
        }
        .exported(
            "ingestd_upload_potential_duplicates_total",
            .counter,
            help: "Records re-sent later than the backend's deduplication window: they may be stored twice."
        ),
        Field(
            key: K.uploadLatency.stringValue,
            write: { status in
                status.uploadLatency.map {
                    .object([
                        ("count", .int($0.count)), ("counts", .array($0.counts.map(JSONValue.int))),
                        ("sumSeconds", .double($0.sumSeconds)),
                    ])
                }
            },
            read: { status, members in
                guard let value = try members.optionalObject(K.uploadLatency.stringValue) else { return }
                let reader = try JSONMembers(value, in: K.uploadLatency.stringValue)
                var latency = UploadLatency()
                latency.count = try reader.int("count")
                latency.counts = try reader.array("counts").map { item in
                    guard let n = item.int64 else { throw reader.wrong("counts", "an array of integers") }
                    return n
                }
                latency.sumSeconds = try reader.optionalDouble("sumSeconds") ?? 0
                status.uploadLatency = latency
            },
            metrics: [
                MetricFamily(
                    name: "ingestd_upload_duration_seconds",
                    kind: .histogram,
                    help: "How long the sink took to answer each batch (re-sends included)."
                ) { status in
                    guard let latency = status.uploadLatency else { return [] }
                    var samples: [MetricFamily<AgentStatus>.Sample] = []
                    var cumulative: Int64 = 0
                    for (bound, count) in zip(UploadLatency.boundsSeconds, latency.counts) {
                        cumulative += count
                        samples.append(
                            .init(
                                suffix: "_bucket",
                                labels: [("le", MetricFamily<AgentStatus>.number(bound))],
                                value: Double(cumulative)
                            )
                        )
                    }
                    samples.append(.init(suffix: "_bucket", labels: [("le", "+Inf")], value: Double(latency.count)))
                    samples.append(.init(suffix: "_sum", value: latency.sumSeconds))
                    samples.append(.init(suffix: "_count", value: Double(latency.count)))
                    return samples
                }
            ]
        ),
        Field(
            key: K.lastUpload.stringValue,
            write: { $0.lastUpload.map { .object([("at", .string($0.at)), ("outcome", .string($0.outcome))]) } },
            read: { status, members in
                guard let last = try members.optionalObject(K.lastUpload.stringValue) else { return }
                let reader = try JSONMembers(last, in: K.lastUpload.stringValue)
                status.lastUpload = LastUpload(at: try reader.string("at"), outcome: try reader.string("outcome"))
            },
            text: { s in s.lastUpload.map { "last upload: \($0.outcome) at \($0.at)" } }
        ),
        Field(
            key: K.inputs.stringValue,
            write: { .array($0.inputs.map(\.jsonValue)) },
            read: { status, members in
                status.inputs = try members.array(K.inputs.stringValue).map { try InputCounters.Snapshot(json: $0) }
            },
            text: { s in s.inputs.isEmpty ? nil : s.inputs.map(\.textLine).joined(separator: "\n  ") },
            metrics: InputCounters.Snapshot.metrics
        ),
        Field(
            key: K.sinks.stringValue,
            write: { $0.sinks.map { .array($0.map(\.jsonValue)) } },
            read: { status, members in
                guard members.value[K.sinks.stringValue].map({ !$0.isNull }) ?? false else { return }
                status.sinks = try members.array(K.sinks.stringValue).map { try SinkSnapshot(json: $0) }
            },
            text: { s in s.sinks.map { $0.map(\.textLine).joined(separator: "\n  ") } },
            metrics: SinkSnapshot.metrics
        ),
    ]

    private typealias K = CodingKeys

    /// `/metrics`: every counter and gauge of the status.
    package var prometheusText: String { Self.fields.prometheusText(of: self) }

    /// ` (bad_json 2, missing_field 1)`, or nothing (also `queue stats`'s).
    package static func reasons(_ byReason: [String: Int64]) -> String {
        byReason.isEmpty
            ? ""
            : " (" + byReason.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
    }

    var jsonValue: JSONValue { Self.fields.json(of: self) }

    init(json: JSONValue) throws {
        self.init(state: AgentState(rawValue: ""), statistics: .empty, inputs: [], pid: 1)
        try Self.fields.read(json, into: &self, place: "the status")
    }

    /// `clock:    unsynchronised since boot, 3 m`, or nil for a synchronised
    /// clock that never jumped (nothing worth a line).
    var clockLine: String? {
        guard let clock else { return nil }
        let jump = clockLastJumpMilliseconds.map { "; last jump \(ClockWatch.signedDuration($0))" } ?? ""
        let span = clockForSeconds.map { ClockWatch.duration($0 * 1_000) }
        switch clock {
        case "synchronised":
            return jump.isEmpty ? nil : "clock:    synchronised" + jump
        case "unsynchronised":
            let since = span.map { clockSinceBoot ? " since boot, \($0)" : " for \($0)" } ?? ""
            return "clock:    unsynchronised\(since)\(jump) (readings are corrected once it is)"
        default:
            return "clock:    synchronisation unknown\(jump) ([clock] synchronised_file can tell)"
        }
    }

    /// `ingestd status`'s lines under its first, indented by two spaces.
    package var textLines: [String] { Self.fields.textLines(of: self).map { "  " + $0 } }
}

extension InputCounters.Snapshot {
    typealias Field = JSONField<InputCounters.Snapshot>

    /// Every member, named as the Codable conformance names them.
    static let fields: [Field] = [
        .string("name", \.name),
        .string("kind", \.kind),
        .int("linesRead", \.linesRead),
        .int("accepted", \.accepted),
        .int("rejected", \.rejected),
        .counts("rejectedByReason", \.rejectedByReason),
        .optionalString("position", \.position),
        .optionalCounts("files", \.files),
        .int("heartbeatAt", \.heartbeatAt),
        .bool("waitingForSpace", \.waitingForSpace),
        .bool("finished", \.finished),
        .bool("disconnected", \.disconnected),
        .optionalString("problem", \.problem),
        .optionalString("listen", \.listen),
        .optionalInt("duplicates", \.duplicates),
        .optionalInt("throttledBatches", \.throttledBatches),
        .optionalString("tlsCertificateExpiresAt", \.tlsCertificateExpiresAt),
    ]

    var jsonValue: JSONValue { Self.fields.json(of: self) }

    /// A warning once the server certificate is within 14 days of expiring.
    var certificateNotice: String? {
        guard let at = tlsCertificateExpiresAt, let expires = Timestamp.parseISO8601(at) else { return nil }
        let left = (expires - wallClockMilliseconds()) / 1000
        if left <= 0 { return "TLS certificate EXPIRED at \(at): renew it" }
        guard left <= TLSFileCheck.warnWithinSeconds else { return nil }
        return "TLS certificate expires at \(at) (in \(left / 86_400) days): renew it"
    }

    init(json: JSONValue) throws {
        self.init(name: "", kind: "")
        try Self.fields.read(json, into: &self, place: "an input")
    }

    /// Its line in `ingestd status`, with one more line per followed file.
    var textLine: String {
        "input \(name): \(linesRead) lines, \(accepted) accepted, \(rejected) rejected"
            + (position.map { ", position \($0)" } ?? "")
            + (disconnected ? (kind == "mqtt" ? ", disconnected from the broker" : ", device disconnected") : "")
            + (problem.map { ", \($0)" } ?? "")
            + (throttledBatches.map { ", \($0) batches over an account's quota (429)" } ?? "")
            + (certificateNotice.map { ", \($0)" } ?? "")
            + (files ?? [:]).sorted { $0.key < $1.key }.map { "\n    \($0.key): offset \($0.value)" }.joined()
    }
}

extension InputCounters.Snapshot {
    /// Each input's counters in `/metrics`, labelled with its name.
    static let metrics: [MetricFamily<AgentStatus>] = [
        perInput("ingestd_input_lines_read_total", "Lines an input read.") { $0.linesRead },
        perInput("ingestd_input_accepted_records_total", "Readings an input had committed.") { $0.accepted },
        MetricFamily(
            name: "ingestd_input_rejected_records_total",
            kind: .counter,
            help: "Lines an input refused, by reason."
        ) {
            status in
            status.inputs.flatMap { input in
                input.rejectedByReason.sorted { $0.key < $1.key }.map {
                    .init(labels: [("input", input.name), ("reason", $0.key)], value: Double($0.value))
                }
            }
        },
        MetricFamily(
            name: "ingestd_input_throttled_batches_total",
            kind: .counter,
            help: "Batches an http input answered 429 because the sending account was over its quota."
        ) { status in
            status.inputs.compactMap { input in
                input.throttledBatches.map { .init(labels: [("input", input.name)], value: Double($0)) }
            }
        },
    ]

    private static func perInput(
        _ name: String,
        _ help: String,
        _ value: @escaping @Sendable (InputCounters.Snapshot) -> Int64
    ) -> MetricFamily<AgentStatus> {
        MetricFamily(name: name, kind: .counter, help: help) { status in
            status.inputs.map { .init(labels: [("input", $0.name)], value: Double(value($0))) }
        }
    }
}
