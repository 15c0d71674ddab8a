/// Where and how the MQTT sink publishes (`sink = "mqtt"`, docs/SINKS.md).
///
/// ```swift
/// var settings = MQTTSettings(host: "broker.example", port: 8883)
/// settings.tls = true
/// settings.topic = try SubjectTemplate("telemetry/{client_id}/{type}/{deviceId}", for: .mqtt)
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
    package var topic: SubjectTemplate
    /// The MQTT client id and the template's `{client_id}`.
    package var clientID: String
    package var keepAliveSeconds: Int32 = 30
    package var connectTimeoutMilliseconds = 10_000
    /// How long one batch may wait for the broker's acknowledgements.
    package var timeoutMilliseconds = 30_000

    package init(host: String, port: Int, topic: SubjectTemplate, clientID: String) {
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
