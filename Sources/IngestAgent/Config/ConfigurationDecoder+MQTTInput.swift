import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// `[[inputs]] kind = "mqtt"` (``MQTTInputSettings`` holds the defaults).
extension ConfigurationDecoder {
    /// Keys only an MQTT input takes.
    static let mqttInputKeys: Set<String> = [
        "url", "topics", "topic_types", "types_from_topic", "client_id", "username", "password_file",
        "session_expiry_s",
        "keepalive_s", "mqtt_version", "receive_maximum", "max_message_bytes", "connect_timeout_ms", "ca_file",
        "client_certificate", "client_key", "dedup_window_s",
    ]

    mutating func decodeMQTTInput(
        _ t: TOMLTable,
        key: String,
        item: TOMLValue,
        types: [RecordType],
        environment: [String: String]
    ) -> MQTTInputSettings? {
        let name = t["name"].flatMap { if case .string(let s) = $0.kind { s } else { nil } }
        var mqtt = MQTTInputSettings(clientID: Self.defaultMQTTClientID(inputName: name))
        if let v = t["url"], let url = string(v, key + ".url") {
            switch MQTTBrokerURL.parse(url) {
            case .success(let broker):
                mqtt.host = broker.host
                mqtt.port = broker.port
                if broker.tls { mqtt.tls = StreamConnection.TLSFiles() }
            case .failure(let failure):
                problem(v, key + ".url", failure.message)
            }
        }
        if let v = t["topics"] {
            mqtt.topics = strings(v, key + ".topics")
            for filter in mqtt.topics {
                if let why = MQTTTopicFilter.problem(filter) {
                    problem(v, key + ".topics", "\(why), got \"\(filter.prefix(60))\"")
                }
            }
        }
        if let v = t["topic_types"], let table = table(v, key + ".topic_types") {
            for entry in table.entries {
                let name = key + ".topic_types.\"\(entry.key.prefix(60))\""
                guard let type = string(entry.value, name) else { continue }
                if let why = MQTTTopicFilter.problem(entry.key) {
                    problem(entry.value, name, "\(why) (the keys of topic_types are topic filters)")
                } else if !types.isEmpty, !types.contains(where: { $0.name == type }) {
                    problem(
                        entry.value,
                        name,
                        "names no declared type: declare [types.\(type.prefix(60))] or use one of \(types.map(\.name).joined(separator: ", "))"
                    )
                } else {
                    mqtt.topicTypes.append(MQTTTopicType(filter: entry.key, type: type))
                }
            }
        }
        if let v = t["types_from_topic"], let text = string(v, key + ".types_from_topic") {
            do {
                let pattern = try MQTTTypePattern(text)
                mqtt.typePattern = pattern
                if let topics = t["topics"],
                    !mqtt.topics.contains(where: { MQTTTopicFilter.matches($0, pattern.filter) })
                {
                    problem(
                        topics,
                        key + ".topics",
                        "none of these filters covers types_from_topic \"\(text.prefix(60))\": leave topics out to subscribe to \"\(pattern.filter)\""
                    )
                }
            } catch {
                problem(v, key + ".types_from_topic", "\(error.message), got \"\(text.prefix(60))\"")
            }
        }
        let subscribed = mqtt.subscriptions
        for (index, filter) in subscribed.enumerated() {
            if let other = subscribed[(index + 1)...].first(where: { MQTTTopicFilter.overlap(filter, $0) }) {
                problem(
                    t["topics"] ?? t["topic_types"] ?? item,
                    key + ".topics",
                    "\"\(filter.prefix(60))\" and \"\(other.prefix(60))\" overlap (some topic matches both), and a broker sends such a message once per subscription: make them disjoint, or use one filter that covers both"
                )
            }
        }
        if mqtt.subscriptions.isEmpty {
            problem(
                item,
                key + ".topics",
                "an mqtt input needs topics to subscribe to, e.g. topics = [\"sensors/#\"], topic_types = { \"weather/#\" = \"WeatherSensor\" } or types_from_topic = \"sensors/{type}/#\""
            )
        }
        if let v = t["client_id"], let id = string(v, key + ".client_id") {
            if id.isEmpty || id.utf8.count > 65_535 {
                problem(v, key + ".client_id", "must be 1 to 65535 bytes; it names the session at the broker")
            } else {
                mqtt.clientID = id
            }
        }
        if let v = t["mqtt_version"], let text = string(v, key + ".mqtt_version") {
            if text == "5" || text == "3.1.1" {
                mqtt.version5 = text == "5"
            } else {
                problem(v, key + ".mqtt_version", "must be \"5\" (the default) or \"3.1.1\"")
            }
        }
        if let v = t["session_expiry_s"], let n = integer(v, key + ".session_expiry_s", min: 1) {
            mqtt.sessionExpirySeconds = UInt32(min(n, Int64(UInt32.max)))
        }
        if let v = t["keepalive_s"], let n = integer(v, key + ".keepalive_s", min: 5) {
            mqtt.keepAliveSeconds = UInt16(min(n, 65_535))
        }
        if let v = t["receive_maximum"], let n = integer(v, key + ".receive_maximum", min: 1) {
            mqtt.receiveMaximum = UInt16(min(n, 65_535))
        }
        if let v = t["max_message_bytes"], let n = integer(v, key + ".max_message_bytes", min: 1024) {
            mqtt.maxMessageBytes = Int(min(n, 256 << 20))
        }
        if let v = t["dedup_window_s"], let n = integer(v, key + ".dedup_window_s", min: 0) {
            mqtt.dedupWindowSeconds = n
        }
        if let v = t["connect_timeout_ms"], let n = integer(v, key + ".connect_timeout_ms", min: 100) {
            mqtt.connectTimeoutMilliseconds = Int(n)
        }
        let files = StreamConnection.TLSFiles(
            caFile: t["ca_file"].flatMap { string($0, key + ".ca_file") },
            certificateFile: t["client_certificate"].flatMap { string($0, key + ".client_certificate") },
            keyFile: t["client_key"].flatMap { string($0, key + ".client_key") }
        )
        if mqtt.tls != nil {
            mqtt.tls = files
        } else if let v = t["ca_file"] ?? t["client_certificate"] ?? t["client_key"] {
            problem(v, key + ".ca_file", "applies only to an mqtts:// url (TLS)")
        }
        for (name, path) in [
            ("ca_file", files.caFile), ("client_certificate", files.certificateFile), ("client_key", files.keyFile),
        ] {
            if let path, access(path, R_OK) != 0 {
                problem(t[name], key + "." + name, "cannot read '\(path)': \(errnoText())")
            }
        }
        mqtt.username = t["username"].flatMap { string($0, key + ".username") }
        mqtt.password = secret(
            t["password_file"],
            key + ".password_file",
            credential: "mqtt-password",
            environment: environment,
            required: false
        )
        if mqtt.password != nil, mqtt.username == nil {
            problem(
                t["password_file"],
                key + ".password_file",
                "needs username too (MQTT sends a password only with a user name)"
            )
        }
        return mqtt
    }

    /// `ingestd-<host name>` (and `-<input name>` when the input is named):
    /// stable across restarts, so the broker's session outlives the agent,
    /// and distinct per box.
    static func defaultMQTTClientID(inputName: String?) -> String {
        var id = "ingestd-" + EdgeIngestCore.hostName()
        if let inputName { id += "-" + inputName }
        return id
    }
}
