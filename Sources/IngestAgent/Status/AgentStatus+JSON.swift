import EdgeIngestCore

/// A status file that cannot be read back: what is wrong with it.
public struct StatusFileError: Error, CustomStringConvertible {
    public let reason: String
    public var description: String { "the status file is not what ingestd writes: \(reason)" }
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
        .string(K.state.stringValue, \.state),
        .string(K.updatedAt.stringValue, \.updatedAt),
        .string(K.openState.stringValue, \.openState, absent: "open"),
        .optionalString(K.problem.stringValue, \.problem, text: { $0.problem.map { "problem:  \($0)" } }),
        .int(K.queuedRecords.stringValue, \.queuedRecords) { s in
            "queued:   \(s.queuedRecords) records, \(s.queuedBytes) bytes"
                + (s.oldestAgeWholeSeconds.map { ", oldest \($0) s" } ?? "")
        },
        .int(K.queuedBytes.stringValue, \.queuedBytes),
        .optionalDouble(K.oldestAgeSeconds.stringValue, \.oldestAgeSeconds),
        .int(K.acceptedTotal.stringValue, \.acceptedTotal) { "accepted: \($0.acceptedTotal)" },
        .int(K.rejectedTotal.stringValue, \.rejectedTotal) {
            "rejected: \($0.rejectedTotal)" + reasons($0.rejectedByReason)
        },
        .counts(K.rejectedByReason.stringValue, \.rejectedByReason),
        .int(K.uploadedTotal.stringValue, \.uploadedTotal) { "uploaded: \($0.uploadedTotal)" },
        .int(K.droppedTotal.stringValue, \.droppedTotal) {
            "dropped:  \($0.droppedTotal)" + reasons($0.droppedByReason)
        },
        .counts(K.droppedByReason.stringValue, \.droppedByReason),
        .int(K.deadLetterRecords.stringValue, \.deadLetterRecords) { s in
            s.deadLetterRecords == 0 ? nil : "dead letters: \(s.deadLetterRecords) (ingestd dead-letter list)"
        },
        .optionalInt(K.receivedDuplicatesTotal.stringValue, \.receivedDuplicatesTotal) { s in
            s.receivedDuplicatesTotal.flatMap { $0 == 0 ? nil : "duplicates: \($0) received again and not stored" }
        },
        .optionalString(K.uploadReason.stringValue, \.uploadReason) { s in
            s.uploadReason.map { reason in
                "upload:   " + (s.backingOffUntil.map { "retrying at \($0) after: " } ?? "") + reason
            }
        },
        .optionalString(K.backingOffUntil.stringValue, \.backingOffUntil),
        .optionalInt(K.uploadRequests.stringValue, \.uploadRequests),
        .optionalInt(K.uploadResends.stringValue, \.uploadResends),
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
            text: { s in s.inputs.isEmpty ? nil : s.inputs.map(\.textLine).joined(separator: "\n  ") }
        ),
    ]

    private typealias K = CodingKeys

    /// ` (bad_json 2, missing_field 1)`, or nothing.
    private static func reasons(_ byReason: [String: Int64]) -> String {
        byReason.isEmpty
            ? ""
            : " (" + byReason.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")"
    }

    var jsonValue: JSONValue { Self.fields.json(of: self) }

    init(json: JSONValue) throws {
        self.init(state: "", statistics: .empty, inputs: [], pid: 1)
        try Self.fields.read(json, into: &self, place: "the status")
    }

    /// `ingestd status`'s lines under its first, indented by two spaces.
    public var textLines: [String] { Self.fields.textLines(of: self).map { "  " + $0 } }
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
    ]

    var jsonValue: JSONValue { Self.fields.json(of: self) }

    init(json: JSONValue) throws {
        self.init(name: "", kind: "")
        try Self.fields.read(json, into: &self, place: "an input")
    }

    /// Its line in `ingestd status`, with one more line per followed file.
    var textLine: String {
        "input \(name): \(linesRead) lines, \(accepted) accepted, \(rejected) rejected"
            + (position.map { ", position \($0)" } ?? "")
            + (disconnected ? ", device disconnected" : "") + (problem.map { ", \($0)" } ?? "")
            + (files ?? [:]).sorted { $0.key < $1.key }.map { "\n    \($0.key): offset \($0.value)" }.joined()
    }
}
