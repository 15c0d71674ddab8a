import EdgeIngestCore

/// A status file that cannot be read back: what is wrong with it.
public struct StatusFileError: Error, CustomStringConvertible {
    public let reason: String
    public var description: String { "the status file is not what ingestd writes: \(reason)" }
}

/// The status as JSON, with the member names of ``AgentStatus/CodingKeys``
/// (snake_case) and Swift's Codable names inside `inputs` and
/// `last_upload`: the same members and values Foundation's JSONEncoder
/// wrote before (a test compares them), without linking Foundation. The
/// text differs in layout only (`"k": v` rather than `"k" : v`, `/` not
/// escaped).
extension AgentStatus {
    var jsonValue: JSONValue {
        typealias K = CodingKeys
        let members: [(CodingKeys, JSONValue?)] = [
            (K.acceptedTotal, .int(acceptedTotal)),
            (K.backingOffUntil, backingOffUntil.map(JSONValue.string)),
            (K.deadLetterRecords, .int(deadLetterRecords)),
            (K.droppedByReason, .counts(droppedByReason)),
            (K.droppedTotal, .int(droppedTotal)),
            (K.inputs, .array(inputs.map(\.jsonValue))),
            (K.lastUpload, lastUpload.map { .object([("at", .string($0.at)), ("outcome", .string($0.outcome))]) }),
            (K.oldestAgeSeconds, oldestAgeSeconds.map(JSONValue.double)),
            (K.openState, .string(openState)),
            (K.pid, .int(Int64(pid))),
            (K.problem, problem.map(JSONValue.string)),
            (K.queuedBytes, .int(queuedBytes)),
            (K.queuedRecords, .int(queuedRecords)),
            (K.receivedDuplicatesTotal, receivedDuplicatesTotal.map(JSONValue.int)),
            (K.rejectedByReason, .counts(rejectedByReason)),
            (K.rejectedTotal, .int(rejectedTotal)),
            (K.state, .string(state)),
            (K.updatedAt, .string(updatedAt)),
            (K.uploadReason, uploadReason.map(JSONValue.string)),
            (K.uploadRequests, uploadRequests.map(JSONValue.int)),
            (K.uploadResends, uploadResends.map(JSONValue.int)),
            (K.uploadedTotal, .int(uploadedTotal)),
        ]
        return .object(omittingNils: members.map { ($0.stringValue, $1) }.sorted { $0.0 < $1.0 })
    }

    init(json: JSONValue) throws {
        let reader = try JSONMembers(json, in: "the status")
        guard let pid = Int32(exactly: try reader.int(CodingKeys.pid.stringValue)), pid > 0 else {
            throw StatusFileError(reason: "'pid' in the status should be a process id (1 or more)")
        }
        try self.init(state: reader.string(CodingKeys.state.stringValue), statistics: .empty, inputs: [], pid: pid)
        updatedAt = try reader.string(CodingKeys.updatedAt.stringValue)
        openState = try reader.optionalString(CodingKeys.openState.stringValue) ?? "open"
        queuedRecords = try reader.int(CodingKeys.queuedRecords.stringValue)
        queuedBytes = try reader.int(CodingKeys.queuedBytes.stringValue)
        oldestAgeSeconds = try reader.optionalDouble(CodingKeys.oldestAgeSeconds.stringValue)
        acceptedTotal = try reader.int(CodingKeys.acceptedTotal.stringValue)
        rejectedTotal = try reader.int(CodingKeys.rejectedTotal.stringValue)
        rejectedByReason = try reader.counts(CodingKeys.rejectedByReason.stringValue)
        uploadedTotal = try reader.int(CodingKeys.uploadedTotal.stringValue)
        droppedTotal = try reader.int(CodingKeys.droppedTotal.stringValue)
        droppedByReason = try reader.counts(CodingKeys.droppedByReason.stringValue)
        if let last = try reader.optionalObject(CodingKeys.lastUpload.stringValue) {
            let lastReader = try JSONMembers(last, in: CodingKeys.lastUpload.stringValue)
            lastUpload = LastUpload(at: try lastReader.string("at"), outcome: try lastReader.string("outcome"))
        }
        inputs = try reader.array(CodingKeys.inputs.stringValue).map { try InputCounters.Snapshot(json: $0) }
        problem = try reader.optionalString(CodingKeys.problem.stringValue)
        deadLetterRecords = try reader.int(CodingKeys.deadLetterRecords.stringValue)
        uploadReason = try reader.optionalString(CodingKeys.uploadReason.stringValue)
        backingOffUntil = try reader.optionalString(CodingKeys.backingOffUntil.stringValue)
        uploadRequests = try reader.optionalInt(CodingKeys.uploadRequests.stringValue)
        uploadResends = try reader.optionalInt(CodingKeys.uploadResends.stringValue)
        receivedDuplicatesTotal = try reader.optionalInt(CodingKeys.receivedDuplicatesTotal.stringValue)
    }
}

extension InputCounters.Snapshot {
    var jsonValue: JSONValue {
        .object(omittingNils: [
            ("accepted", .int(accepted)),
            ("disconnected", .bool(disconnected)),
            ("duplicates", duplicates.map(JSONValue.int)),
            ("files", files.map(JSONValue.counts)),
            ("finished", .bool(finished)),
            ("heartbeatAt", .int(heartbeatAt)),
            ("kind", .string(kind)),
            ("linesRead", .int(linesRead)),
            ("listen", listen.map(JSONValue.string)),
            ("name", .string(name)),
            ("position", position.map(JSONValue.string)),
            ("problem", problem.map(JSONValue.string)),
            ("rejected", .int(rejected)),
            ("rejectedByReason", .counts(rejectedByReason)),
            ("waitingForSpace", .bool(waitingForSpace)),
        ])
    }

    init(json: JSONValue) throws {
        let reader = try JSONMembers(json, in: "an input")
        self.init(name: try reader.string("name"), kind: try reader.string("kind"))
        linesRead = try reader.int("linesRead")
        accepted = try reader.int("accepted")
        rejected = try reader.int("rejected")
        rejectedByReason = try reader.counts("rejectedByReason")
        position = try reader.optionalString("position")
        files = try reader.optionalObject("files") == nil ? nil : try reader.counts("files")
        heartbeatAt = try reader.int("heartbeatAt")
        waitingForSpace = try reader.optionalBool("waitingForSpace") ?? false
        finished = try reader.optionalBool("finished") ?? false
        disconnected = try reader.optionalBool("disconnected") ?? false
        problem = try reader.optionalString("problem")
        listen = try reader.optionalString("listen")
        duplicates = try reader.optionalInt("duplicates")
    }
}

/// Typed member lookups that say which member is missing or of the wrong kind.
private struct JSONMembers {
    let value: JSONValue
    let place: String

    init(_ value: JSONValue, in place: String) throws {
        guard value.members != nil else { throw StatusFileError(reason: "\(place) is not a JSON object") }
        self.value = value
        self.place = place
    }

    private func wrong(_ key: String, _ expected: String) -> StatusFileError {
        StatusFileError(reason: "'\(key)' in \(place) should be \(expected)")
    }

    /// The member read by `extract`; nil when absent or null; an error
    /// naming `expected` when `extract` cannot read it.
    private func optional<T>(_ key: String, _ expected: String, _ extract: (JSONValue) -> T?) throws -> T? {
        guard let v = value[key], !v.isNull else { return nil }
        guard let t = extract(v) else { throw wrong(key, expected) }
        return t
    }

    private func required<T>(_ key: String, _ expected: String, _ extract: (JSONValue) -> T?) throws -> T {
        guard let t = try optional(key, expected, extract) else { throw wrong(key, expected) }
        return t
    }

    func optionalString(_ key: String) throws -> String? { try optional(key, "a string", \.string) }
    func string(_ key: String) throws -> String { try required(key, "a string", \.string) }
    func optionalInt(_ key: String) throws -> Int64? { try optional(key, "an integer", \.int64) }
    func int(_ key: String) throws -> Int64 { try required(key, "an integer", \.int64) }
    func optionalDouble(_ key: String) throws -> Double? { try optional(key, "a number", \.double) }
    func optionalBool(_ key: String) throws -> Bool? { try optional(key, "true or false", \.bool) }
    func optionalObject(_ key: String) throws -> JSONValue? { try optional(key, "an object") { $0.members == nil ? nil : $0 } }
    func array(_ key: String) throws -> [JSONValue] { try required(key, "an array", \.array) }
    func counts(_ key: String) throws -> [String: Int64] { try required(key, "an object of integers", \.counts) }
}
