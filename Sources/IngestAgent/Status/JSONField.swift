import EdgeIngestCore

/// One member of a JSON document the agent writes and reads back (the
/// status file, an input's counters): its name, how it is written, how it is
/// read, and its line in `ingestd status`'s text. A type's list of fields is
/// the one table its encoder, decoder and text follow, so a new counter is
/// one property and one entry.
///
/// ```swift
/// static let fields: [JSONField<AgentStatus>] = [
///     .int("accepted_total", \.acceptedTotal, text: { "accepted: \($0.acceptedTotal)" }),
///     .optionalString("problem", \.problem),
/// ]
/// ```
struct JSONField<Root>: Sendable {
    typealias Path<Value> = WritableKeyPath<Root, Value> & Sendable

    let key: String
    let write: @Sendable (Root) -> JSONValue?
    let read: @Sendable (inout Root, JSONMembers) throws -> Void
    /// Its line in `ingestd status` (without indentation), or nil when it
    /// has none or nothing to show.
    var text: (@Sendable (Root) -> String?)?
    /// Its number, for fields that have one (what ``exported(_:_:help:)`` reads).
    var number: (@Sendable (Root) -> Double?)? = nil
    /// Its counts by name, for fields that have them.
    var counts: (@Sendable (Root) -> [String: Int64])? = nil
    /// The metrics it gives `/metrics` (``MetricFamily``).
    var metrics: [MetricFamily<Root>] = []

    static func int(_ key: String, _ path: Path<Int64>, text: (@Sendable (Root) -> String?)? = nil) -> Self {
        Self(
            key: key,
            write: { .int($0[keyPath: path]) },
            read: { $0[keyPath: path] = try $1.int(key) },
            text: text,
            number: { Double($0[keyPath: path]) }
        )
    }

    static func optionalInt(_ key: String, _ path: Path<Int64?>, text: (@Sendable (Root) -> String?)? = nil) -> Self {
        Self(
            key: key,
            write: { $0[keyPath: path].map(JSONValue.int) },
            read: { $0[keyPath: path] = try $1.optionalInt(key) },
            text: text,
            number: { $0[keyPath: path].map(Double.init) }
        )
    }

    static func string(_ key: String, _ path: Path<String>, text: (@Sendable (Root) -> String?)? = nil) -> Self {
        Self(
            key: key,
            write: { .string($0[keyPath: path]) },
            read: { $0[keyPath: path] = try $1.string(key) },
            text: text
        )
    }

    static func optionalString(_ key: String, _ path: Path<String?>, text: (@Sendable (Root) -> String?)? = nil) -> Self
    {
        Self(
            key: key,
            write: { $0[keyPath: path].map(JSONValue.string) },
            read: { $0[keyPath: path] = try $1.optionalString(key) },
            text: text
        )
    }

    /// A string that older files may lack: `absent` is what they meant.
    static func string(_ key: String, _ path: Path<String>, absent: String) -> Self {
        Self(
            key: key,
            write: { .string($0[keyPath: path]) },
            read: { $0[keyPath: path] = try $1.optionalString(key) ?? absent }
        )
    }

    static func optionalDouble(_ key: String, _ path: Path<Double?>) -> Self {
        Self(
            key: key,
            write: { $0[keyPath: path].map(JSONValue.double) },
            read: { $0[keyPath: path] = try $1.optionalDouble(key) },
            number: { $0[keyPath: path] }
        )
    }

    /// A flag that older files may lack (false).
    static func bool(_ key: String, _ path: Path<Bool>) -> Self {
        Self(
            key: key,
            write: { .bool($0[keyPath: path]) },
            read: { $0[keyPath: path] = try $1.optionalBool(key) ?? false }
        )
    }

    /// Counts by name (`{"bad_json": 2}`).
    static func counts(_ key: String, _ path: Path<[String: Int64]>) -> Self {
        Self(
            key: key,
            write: { .counts($0[keyPath: path]) },
            read: { $0[keyPath: path] = try $1.counts(key) },
            counts: { $0[keyPath: path] }
        )
    }

    static func optionalCounts(_ key: String, _ path: Path<[String: Int64]?>) -> Self {
        Self(
            key: key,
            write: { $0[keyPath: path].map(JSONValue.counts) },
            read: { $0[keyPath: path] = try $1.optionalObject(key) == nil ? nil : try $1.counts(key) }
        )
    }
}

extension Array {
    /// The document: every field's member, sorted by name, absent ones left out.
    func json<Root>(of root: Root) -> JSONValue where Element == JSONField<Root> {
        .object(omittingNils: map { ($0.key, $0.write(root)) }.sorted { $0.0 < $1.0 })
    }

    /// Reads every field of `json` into `root`; the first member missing or
    /// of the wrong kind throws, naming it.
    func read<Root>(_ json: JSONValue, into root: inout Root, place: String) throws where Element == JSONField<Root> {
        let members = try JSONMembers(json, in: place)
        for field in self { try field.read(&root, members) }
    }

    /// The lines of `ingestd status`'s text these fields give.
    func textLines<Root>(of root: Root) -> [String] where Element == JSONField<Root> {
        compactMap { $0.text?(root) }
    }
}

/// Typed member lookups that say which member is missing or of the wrong kind.
struct JSONMembers {
    let value: JSONValue
    let place: String

    init(_ value: JSONValue, in place: String) throws {
        guard value.members != nil else { throw StatusFileError(reason: "\(place) is not a JSON object") }
        self.value = value
        self.place = place
    }

    func wrong(_ key: String, _ expected: String) -> StatusFileError {
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
    func optionalObject(_ key: String) throws -> JSONValue? {
        try optional(key, "an object") { $0.members == nil ? nil : $0 }
    }
    func array(_ key: String) throws -> [JSONValue] { try required(key, "an array", \.array) }
    func counts(_ key: String) throws -> [String: Int64] { try required(key, "an object of integers", \.counts) }
}
