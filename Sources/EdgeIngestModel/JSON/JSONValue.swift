/// A JSON document in memory: what the small files and answers EdgeIngest
/// reads and writes outside the record path are made of (the credential
/// cache, the agent's status file, login answers, HTTP input answers).
///
/// It replaces Foundation's `JSONEncoder`/`JSONDecoder` there: importing
/// Foundation (even FoundationEssentials) into any module the agent links
/// adds megabytes to the stripped binary (docs/BENCHMARKS.md, "Binary size").
/// Records themselves never go through it (``JSONWriter`` and the agent's
/// NDJSON parser are faster and allocate less).
///
/// ```swift
/// let value = try JSONValue.parse(Array(#"{"user_id":"u1","expires_in":1800}"#.utf8))
/// let id = value["user_id"]?.string          // "u1"
/// let seconds = value["expires_in"]?.int64   // 1800
/// let text = JSONValue.object([("ok", .bool(true))]).text()   // {"ok":true}
/// ```
package indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    /// Members in the order written or read (a key repeated in a parsed
    /// document: the last one wins in lookups).
    case object([(String, JSONValue)])

    /// The member named `key` of an object; nil for other values.
    package subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.last { $0.0 == key }?.1
    }

    package var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// An integer, or a double with an exact integer value.
    package var int64: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d): return Int64(exactly: d)
        default: return nil
        }
    }

    package var double: Double? {
        switch self {
        case .double(let d): return d
        case .int(let i): return Double(i)
        default: return nil
        }
    }

    package var bool: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    package var array: [JSONValue]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// An object's members; nil for other values.
    package var members: [(String, JSONValue)]? {
        if case .object(let members) = self { return members }
        return nil
    }

    package var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    package static func == (a: JSONValue, b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.int(let x), .int(let y)): return x == y
        case (.double(let x), .double(let y)): return x == y
        case (.string(let x), .string(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.object(let x), .object(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }
}

extension JSONValue {
    /// An object without the members whose value is nil (as Codable
    /// writes optionals).
    package static func object(omittingNils members: [(String, JSONValue?)]) -> JSONValue {
        .object(members.compactMap { name, value in value.map { (name, $0) } })
    }

    /// An object of integers, keys sorted.
    package static func counts(_ counts: [String: Int64]) -> JSONValue {
        .object(counts.sorted { $0.key < $1.key }.map { ($0.key, .int($0.value)) })
    }

    /// The integers of an object of integers; nil if it is not one.
    package var counts: [String: Int64]? {
        guard let members else { return nil }
        var out: [String: Int64] = [:]
        for (key, value) in members {
            guard let n = value.int64 else { return nil }
            out[key] = n
        }
        return out
    }
}
