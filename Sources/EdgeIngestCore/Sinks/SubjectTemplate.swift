/// Where a message goes, with placeholders: an MQTT topic or a NATS
/// subject. `{type}` is the record type, `{client_id}` the agent's client
/// id, and any other `{field}` the record's value of that field (`_` when
/// it has none). A value never adds a level or a wildcard: MQTT's `/`, `+`
/// and `#`, or NATS's `.`, `*`, `>` and white space, become `_`.
///
/// ```swift
/// let topic = try SubjectTemplate("telemetry/{client_id}/{type}/{deviceId}", for: .mqtt)
/// topic.fields   // ["deviceId"]
/// let subject = try SubjectTemplate("telemetry.{client_id}.{type}", for: .nats)
/// ```
package struct SubjectTemplate: Sendable, Equatable {
    /// Whose naming rules the template follows.
    package enum Flavor: Sendable, Equatable {
        /// Levels split by `/`; `+` and `#` are wildcards.
        case mqtt
        /// Tokens split by `.`; `*` and `>` are wildcards; no white space.
        case nats

        /// Whether `byte` may not come from a value.
        func isSpecial(_ byte: UInt8) -> Bool {
            switch self {
            case .mqtt: return byte == UInt8(ascii: "/") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "#")
            case .nats:
                return byte == UInt8(ascii: ".") || byte == UInt8(ascii: "*") || byte == UInt8(ascii: ">")
                    || byte <= 0x20 || byte == 0x7F
            }
        }
    }

    /// Why a template cannot be used.
    package struct Problem: Error, Sendable, CustomStringConvertible {
        package let message: String
        package var description: String { message }
    }

    enum Part: Sendable, Equatable {
        case text(String)
        case type
        case clientID
        case field(String)
    }
    let parts: [Part]
    package let text: String
    package let flavor: Flavor

    /// - Throws: a ``Problem`` saying what is wrong with the template.
    package init(_ text: String, for flavor: Flavor) throws(Problem) {
        self.text = text
        self.flavor = flavor
        var parts: [Part] = []
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            if open > rest.startIndex { parts.append(.text(String(rest[..<open]))) }
            guard let close = rest[open...].firstIndex(of: "}") else {
                throw Problem(message: "has a '{' without its '}'")
            }
            let name = String(rest[rest.index(after: open)..<close])
            guard !name.isEmpty else { throw Problem(message: "has an empty placeholder '{}'") }
            switch name {
            case "type": parts.append(.type)
            case "client_id": parts.append(.clientID)
            default: parts.append(.field(name))
            }
            rest = rest[rest.index(after: close)...]
        }
        if !rest.isEmpty { parts.append(.text(String(rest))) }
        for case .text(let literal) in parts where literal.contains("}") {
            throw Problem(message: "has a '}' without its '{'")
        }
        switch flavor {
        case .mqtt:
            guard !text.isEmpty, !text.contains("+"), !text.contains("#") else {
                throw Problem(message: "must be a topic name without the wildcards '+' and '#'")
            }
        case .nats:
            guard !text.isEmpty, !text.contains("*"), !text.contains(">"),
                !text.utf8.contains(where: { $0 <= 0x20 || $0 == 0x7F })
            else {
                throw Problem(message: "must be a subject without the wildcards '*' and '>' and without spaces")
            }
            guard !text.hasPrefix("."), !text.hasSuffix("."), !text.contains("..") else {
                throw Problem(message: "must not have an empty token (a '.' at either end, or '..')")
            }
        }
        self.parts = parts
    }

    /// The record fields the template names.
    package var fields: [String] {
        parts.compactMap { if case .field(let name) = $0 { return name } else { return nil } }
    }

    /// The topic or subject for one record (`field` gives a field's value as text, or nil).
    package func render(type: String, clientID: String, field: (String) -> String?) -> String {
        var out = ""
        out.reserveCapacity(64)
        for part in parts {
            switch part {
            case .text(let text): out += text
            case .type: out += level(type)
            case .clientID: out += level(clientID)
            case .field(let name): out += level(field(name) ?? "_")
            }
        }
        return out
    }

    private func level(_ value: String) -> String {
        guard !value.isEmpty else { return "_" }
        // Most values have none of them: no new string (a per-character map was 3 % of a drain).
        guard value.utf8.contains(where: flavor.isSpecial) else { return value }
        return String(decoding: value.utf8.map { flavor.isSpecial($0) ? UInt8(ascii: "_") : $0 }, as: UTF8.self)
    }
}
