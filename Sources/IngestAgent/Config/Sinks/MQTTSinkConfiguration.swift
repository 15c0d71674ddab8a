import EdgeIngestCore

/// `sink = "mqtt"`: publishes to an MQTT broker at `upload.url`
/// (`mqtt://host:1883` or `mqtts://host:8883`), one message per record or
/// per batch, deleting records only once the broker acknowledged them.
///
/// ```toml
/// [upload]
/// sink = "mqtt"
/// url = "mqtts://broker.example:8883"
/// topic = "telemetry/{client_id}/{type}/{deviceId}"
/// qos = 1
/// username = "edge-17"
/// password_file = "/etc/ingestd/mqtt-password"
/// ```
struct MQTTSinkConfiguration: SinkConfiguration {
    static let name = "mqtt"
    static let ownKeys: Set<String> = [
        "topic", "message", "qos", "mqtt_version", "username", "password_file", "keepalive_s",
    ]
    static let isOverHTTP = false
    static let httpKeysRead: Set<String> = [
        "url", "ca_file", "client_certificate", "client_key", "connect_timeout_ms", "timeout_ms",
    ]
    static let withoutHTTP = "publishes over MQTT (TLS: mqtts:// with ca_file, client_certificate, client_key)"

    let settings: MQTTSettings
    /// Whether `upload.client_id` names the session (else ``sessionClientID(_:upload:)`` makes one).
    var clientIDIsSet = false

    static func decode(
        _ upload: TOMLTable,
        _ decoder: inout ConfigurationDecoder,
        environment: [String: String]
    ) -> Self? {
        let example = "the broker, e.g. \"mqtt://127.0.0.1:1883\" or \"mqtts://broker.example:8883\""
        guard let url = decoder.requiredString(upload, "url", sink: name, what: example) else { return nil }
        let broker: MQTTBrokerURL
        switch MQTTBrokerURL.parse(url) {
        case .success(let parsed): broker = parsed
        case .failure(let problem):
            decoder.problem(upload["url"], "upload.url", problem.message)
            return nil
        }
        let tls = broker.tls
        let hostName = broker.host
        let port = broker.port
        let topicText = decoder.string(upload["topic"], "upload.topic") ?? "ingestd/{client_id}/{type}"
        let topic: SubjectTemplate
        do {
            topic = try SubjectTemplate(topicText, for: .mqtt)
        } catch {
            decoder.problem(upload["topic"], "upload.topic", "\(error.message), got \"\(topicText.prefix(60))\"")
            return nil
        }
        var settings = MQTTSettings(host: hostName, port: port, topic: topic, clientID: EdgeIngestCore.hostName())
        let clientIDIsSet = upload["client_id"] != nil
        settings.tls = tls
        if let v = upload["message"], let text = decoder.string(v, "upload.message") {
            guard let message = MQTTSettings.Message(rawValue: text) else {
                decoder.problem(
                    v,
                    "upload.message",
                    "must be \"record\" (one message per record) or \"batch\" (one NDJSON message per batch)"
                )
                return nil
            }
            settings.message = message
        }
        if let v = upload["qos"], let n = decoder.integer(v, "upload.qos", min: 0) {
            guard n <= 2 else {
                decoder.problem(v, "upload.qos", "must be 0, 1 or 2 (1, the default, is acknowledged by the broker)")
                return nil
            }
            settings.qos = Int32(n)
        }
        if let v = upload["mqtt_version"], let text = decoder.string(v, "upload.mqtt_version") {
            guard text == "5" || text == "3.1.1" else {
                decoder.problem(v, "upload.mqtt_version", "must be \"5\" (the default) or \"3.1.1\"")
                return nil
            }
            settings.version5 = text == "5"
        }
        if let v = upload["keepalive_s"], let n = decoder.integer(v, "upload.keepalive_s", min: 5) {
            settings.keepAliveSeconds = Int32(min(n, 65535))
        }
        if let v = upload["connect_timeout_ms"], let n = decoder.integer(v, "upload.connect_timeout_ms", min: 1) {
            settings.connectTimeoutMilliseconds = Int(n)
        }
        if let v = upload["timeout_ms"], let n = decoder.integer(v, "upload.timeout_ms", min: 1) {
            settings.timeoutMilliseconds = Int(n)
        }
        settings.caFile = decoder.string(upload["ca_file"], "upload.ca_file")
        settings.clientCertificate = decoder.string(upload["client_certificate"], "upload.client_certificate")
        settings.clientKey = decoder.string(upload["client_key"], "upload.client_key")
        if !tls, settings.caFile != nil || settings.clientCertificate != nil {
            decoder.problem(
                upload["ca_file"] ?? upload["client_certificate"],
                "upload.ca_file",
                "applies only to mqtts:// URLs"
            )
        }
        settings.username = decoder.string(upload["username"], "upload.username")
        settings.password = decoder.secret(
            upload["password_file"],
            "upload.password_file",
            credential: "mqtt-password",
            environment: environment,
            required: false
        )
        if settings.password != nil, settings.username == nil {
            decoder.problem(
                upload["password_file"],
                "upload.password_file",
                "needs upload.username too (MQTT sends a password only with a user name)"
            )
        }
        return Self(settings: settings, clientIDIsSet: clientIDIsSet)
    }

    /// Field placeholders must name declared fields, and a batch message has
    /// no single record to take them from.
    func check(_ configuration: AgentConfiguration, upload: TOMLTable, _ decoder: inout ConfigurationDecoder) {
        // Message ids are 16 bits: a batch of more messages could not tell their acknowledgements apart.
        if settings.message == .record, let maxRecords = configuration.upload?.maxRecords, maxRecords > 65_535 {
            decoder.problem(
                upload["max_records"],
                "upload.max_records",
                "must be at most 65535 with sink = \"mqtt\" and message = \"record\" (MQTT message ids are 16 bits)"
            )
        }
        for field in settings.topic.fields {
            if settings.message == .batch {
                decoder.problem(
                    upload["topic"],
                    "upload.topic",
                    "names the field '{\(field.prefix(40))}', but message = \"batch\" publishes many records at once: use {type} and {client_id} only"
                )
            } else if !configuration.types.contains(where: { $0.fields.contains { $0.name == field } }) {
                decoder.problem(
                    upload["topic"],
                    "upload.topic",
                    "names '{\(field.prefix(40))}', which no record type under [types] declares (placeholders: {type}, {client_id}, or a field)"
                )
            }
        }
    }

    func summary(_ configuration: AgentConfiguration, upload: UploadSettings) -> String {
        var settings = settings
        settings.clientID = sessionClientID(configuration, upload: upload)
        return
            "\(settings), topic \(settings.topic.text), one message per \(settings.message.rawValue), QoS \(settings.qos), client id \(settings.clientID), password \(settings.password == nil ? "none" : "set"), \(upload.maxRecords) records per batch"
    }

    func makeSink(_ configuration: AgentConfiguration, upload: UploadSettings, userAgent: String) -> SinkFactory {
        var settings = settings
        settings.clientID = sessionClientID(configuration, upload: upload)
        return { [settings] in MQTTSink(settings: settings) }
    }

    /// The client id of the broker session: `upload.client_id` when set;
    /// else one unique per box and per agent. The host name alone is not:
    /// two agents on one host, or many Raspberry Pis all named
    /// `raspberrypi`, would take each other's session over at the broker.
    /// (`{client_id}` in topics stays `upload.client_id`'s value, by default
    /// the host name.)
    func sessionClientID(_ configuration: AgentConfiguration, upload: UploadSettings) -> String {
        if clientIDIsSet { return upload.clientID }
        return AgentIdentity.clientID(
            prefix: "ingestd-" + EdgeIngestCore.hostName(),
            stateDirectory: configuration.stateDirectory
        )
    }
}
