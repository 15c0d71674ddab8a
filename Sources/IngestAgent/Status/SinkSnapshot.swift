import EdgeIngestCore

/// One sink's line in the status, when the agent has several
/// (`[sinks.NAME]`): what waits for it, what it delivered and refused,
/// what was dropped behind for it, and its uploader's state.
package struct SinkSnapshot: Codable, Sendable, Equatable {
    package var name: String
    /// Its uploader's phase (``AgentState``'s names: `idle`, `uploading`, `backing_off`, …).
    package var state: String
    /// Why it is not delivering, when it is not (its last answer or error).
    package var reason: String?
    package var queuedRecords: Int64
    package var queuedBytes: Int64
    package var uploaded: Int64
    package var deadLettered: Int64
    /// Records dropped for it by reason (`sink_lagged`, and the queue's own
    /// drops of records it was owed).
    package var dropped: [String: Int64]
    package var lastUploadAt: String?
    package var lastOutcome: String?

    init(statistics: SinkStatistics, upload: UploadState.Snapshot) {
        name = statistics.name
        state = AgentState(upload.state).rawValue
        reason = upload.reason
        queuedRecords = statistics.queuedRecords
        queuedBytes = statistics.queuedBytes
        uploaded = statistics.acknowledgedTotal
        deadLettered = statistics.deadLetteredTotal
        dropped = statistics.droppedByReason
        lastUploadAt = upload.lastUploadAt
        lastOutcome = upload.lastOutcome
    }

    init(name: String) {
        self.name = name
        state = ""
        queuedRecords = 0
        queuedBytes = 0
        uploaded = 0
        deadLettered = 0
        dropped = [:]
    }

    typealias Field = JSONField<SinkSnapshot>

    /// Every member, named as the Codable conformance names them.
    static let fields: [Field] = [
        .string("name", \.name),
        .string("state", \.state),
        .optionalString("reason", \.reason),
        .int("queuedRecords", \.queuedRecords),
        .int("queuedBytes", \.queuedBytes),
        .int("uploaded", \.uploaded),
        .int("deadLettered", \.deadLettered),
        .counts("dropped", \.dropped),
        .optionalString("lastUploadAt", \.lastUploadAt),
        .optionalString("lastOutcome", \.lastOutcome),
    ]

    var jsonValue: JSONValue { Self.fields.json(of: self) }

    init(json: JSONValue) throws {
        self.init(name: "")
        try Self.fields.read(json, into: &self, place: "a sink")
    }

    /// Its line in `ingestd status`.
    var textLine: String {
        "sink \(name): \(state), \(queuedRecords) queued (\(queuedBytes) bytes), \(uploaded) uploaded"
            + (deadLettered > 0 ? ", \(deadLettered) dead letters" : "")
            + (dropped.isEmpty ? "" : ", dropped" + AgentStatus.reasons(dropped))
            + (reason.map { ": \($0)" } ?? "")
    }

    /// Each sink's numbers in `/metrics`, labelled with its name.
    static let metrics: [MetricFamily<AgentStatus>] = [
        perSink("ingestd_sink_queued_records", .gauge, "Readings waiting for a sink (of several).") {
            $0.queuedRecords
        },
        perSink("ingestd_sink_queued_bytes", .gauge, "Bytes of the readings waiting for a sink.") { $0.queuedBytes },
        perSink("ingestd_sink_uploaded_records_total", .counter, "Readings a sink confirmed.") { $0.uploaded },
        perSink("ingestd_sink_dead_lettered_records_total", .counter, "Readings a sink refused one by one.") {
            $0.deadLettered
        },
        MetricFamily(
            name: "ingestd_sink_dropped_records_total",
            kind: .counter,
            help: "Readings dropped for a sink, by reason (sink_lagged: it fell too far behind)."
        ) { status in
            (status.sinks ?? []).flatMap { sink in
                sink.dropped.sorted { $0.key < $1.key }.map {
                    .init(labels: [("sink", sink.name), ("reason", $0.key)], value: Double($0.value))
                }
            }
        },
        MetricFamily(
            name: "ingestd_sink_up",
            kind: .gauge,
            help: "1 while a sink delivers or has nothing to deliver; 0 while it backs off, is held or failed."
        ) { status in
            (status.sinks ?? []).map {
                .init(labels: [("sink", $0.name)], value: ["idle", "uploading"].contains($0.state) ? 1 : 0)
            }
        },
    ]

    private static func perSink(
        _ name: String,
        _ kind: MetricFamily<AgentStatus>.Kind,
        _ help: String,
        _ value: @escaping @Sendable (SinkSnapshot) -> Int64
    ) -> MetricFamily<AgentStatus> {
        MetricFamily(name: name, kind: kind, help: help) { status in
            (status.sinks ?? []).map { .init(labels: [("sink", $0.name)], value: Double(value($0))) }
        }
    }
}
