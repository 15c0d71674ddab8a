import EdgeIngestCore

/// A broker's address as the MQTT sink's `upload.url` and the MQTT input's
/// `url` write it: `mqtt://host:1883`, `mqtts://host:8883` (TLS),
/// `mqtt://[::1]:1883`; the port defaults to 1883, or 8883 with TLS.
struct MQTTBrokerURL: Sendable, Hashable {
    var tls: Bool
    var host: String
    var port: Int

    struct Problem: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    static func parse(_ url: String) -> Result<MQTTBrokerURL, Problem> {
        let tls = url.hasPrefix("mqtts://")
        guard tls || url.hasPrefix("mqtt://") else {
            return .failure(Problem("must start with mqtt:// or mqtts://, got \"\(redactedURL(url).prefix(40))\""))
        }
        var hostPort = url.dropFirst(tls ? 8 : 7)
        if hostPort.hasSuffix("/") { hostPort.removeLast() }
        var host: Substring
        var portText: Substring?
        if hostPort.hasPrefix("[") {  // [IPv6]:port
            guard let close = hostPort.firstIndex(of: "]") else {
                return .failure(Problem("has a '[' without its ']' around an IPv6 address"))
            }
            host = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            let rest = hostPort[hostPort.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else {
                    return .failure(Problem("must be mqtt(s)://[address]:port after an IPv6 address"))
                }
                portText = rest.dropFirst()
            }
        } else if let colon = hostPort.firstIndex(of: ":") {
            host = hostPort[..<colon]
            portText = hostPort[hostPort.index(after: colon)...]
        } else {
            host = hostPort
        }
        var port = tls ? 8883 : 1883
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else {
                return .failure(
                    Problem(
                        "has a port that is not a number from 1 to 65535 (an IPv6 address goes in brackets: mqtt://[::1]:1883)"
                    )
                )
            }
            port = p
        }
        guard !host.isEmpty, !host.contains("/"), !host.contains("@"), !host.contains("["), !host.contains("]") else {
            return .failure(
                Problem(
                    "must be mqtt(s)://host:port, without a path or credentials (the user name and password have keys of their own)"
                )
            )
        }
        return .success(MQTTBrokerURL(tls: tls, host: String(host), port: port))
    }
}
