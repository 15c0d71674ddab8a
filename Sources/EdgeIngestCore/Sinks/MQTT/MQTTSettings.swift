/// Where and how the MQTT sink publishes (`sink = "mqtt"`, docs/SINKS.md).
///
/// ```swift
/// var settings = MQTTSettings(host: "broker.example", port: 8883)
/// settings.tls = true
/// settings.topic = try MQTTTopicTemplate("telemetry/{client_id}/{type}/{deviceId}")
/// ```
package struct MQTTSettings: Sendable, CustomStringConvertible {
    /// One MQTT message per record (JSON), or one per batch (NDJSON).
    package enum Message: String, Sendable { case record, batch }

    package var host: String
    package var port: Int
    /// TLS (`mqtts://`): with ``caFile`` or the system's CAs.
    package var tls = false
    package var caFile: String?
    package var clientCertificate: String?
    package var clientKey: String?
    package var username: String?
    package var password: String?
    /// MQTT 5 (the default) or 3.1.1 (no user properties).
    package var version5 = true
    /// 0, 1 (the default) or 2.
    package var qos: Int32 = 1
    package var message = Message.record
    package var topic: MQTTTopicTemplate
    /// The MQTT client id and the template's `{client_id}`.
    package var clientID: String
    package var keepAliveSeconds: Int32 = 30
    package var connectTimeoutMilliseconds = 10_000
    /// How long one batch may wait for the broker's acknowledgements.
    package var timeoutMilliseconds = 30_000

    package init(host: String, port: Int, topic: MQTTTopicTemplate, clientID: String) {
        self.host = host
        self.port = port
        self.topic = topic
        self.clientID = clientID
    }

    /// `mqtt(s)://host:port`, never the password.
    package var description: String {
        "MQTT \(version5 ? "5" : "3.1.1") broker \(tls ? "mqtts" : "mqtt")://\(host):\(port)"
    }
}

/// A topic with placeholders: `{type}` (the record type), `{client_id}`,
/// and any other `{field}` (the record's value of that field; `_`
/// when it has none). Values have `/`, `+` and `#` replaced with `_`, so a
/// value never adds a topic level or a wildcard.
///
/// ```swift
/// let template = try MQTTTopicTemplate("telemetry/{client_id}/{type}/{deviceId}")
/// template.fields   // ["deviceId"]
/// ```
package struct MQTTTopicTemplate: Sendable, Equatable {
    enum Part: Sendable, Equatable {
        case text(String)
        case type
        case clientID
        case field(String)
    }
    let parts: [Part]
    package let text: String

    /// - Throws: a message saying what is wrong with the template.
    package init(_ text: String) throws(MQTTError) {
        self.text = text
        var parts: [Part] = []
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            if open > rest.startIndex { parts.append(.text(String(rest[..<open]))) }
            guard let close = rest[open...].firstIndex(of: "}") else {
                throw MQTTError(.configuration, "has a '{' without its '}'")
            }
            let name = String(rest[rest.index(after: open)..<close])
            guard !name.isEmpty else { throw MQTTError(.configuration, "has an empty placeholder '{}'") }
            switch name {
            case "type": parts.append(.type)
            case "client_id": parts.append(.clientID)
            default: parts.append(.field(name))
            }
            rest = rest[rest.index(after: close)...]
        }
        if !rest.isEmpty { parts.append(.text(String(rest))) }
        guard !text.isEmpty, !text.contains("+"), !text.contains("#") else {
            throw MQTTError(.configuration, "must be a topic name without the wildcards '+' and '#'")
        }
        for case .text(let literal) in parts where literal.contains("}") {
            throw MQTTError(.configuration, "has a '}' without its '{'")
        }
        self.parts = parts
    }

    /// The record fields the template names.
    package var fields: [String] {
        parts.compactMap { if case .field(let name) = $0 { return name } else { return nil } }
    }

    /// The topic for one record (`field` gives a field's value as text, or nil).
    func render(type: String, clientID: String, field: (String) -> String?) -> String {
        var out = ""
        out.reserveCapacity(64)
        for part in parts {
            switch part {
            case .text(let text): out += text
            case .type: out += Self.level(type)
            case .clientID: out += Self.level(clientID)
            case .field(let name): out += Self.level(field(name) ?? "_")
            }
        }
        return out
    }

    private static func level(_ value: String) -> String {
        guard !value.isEmpty else { return "_" }
        // Most values have none of the three: no new string (a per-character map was 3 % of a drain).
        guard
            value.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") }
            )
        else { return value }
        return String(value.map { $0 == "/" || $0 == "+" || $0 == "#" ? "_" : $0 })
    }
}
