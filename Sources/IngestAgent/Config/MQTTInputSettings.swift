import EdgeIngestCore

/// An MQTT input (`kind = "mqtt"`): subscribes to topic filters on a broker
/// with a persistent session at QoS 1, and acknowledges each message only
/// once its readings are committed to the queue (docs/INPUTS.md, "MQTT").
package struct MQTTInputSettings: Sendable, Hashable {
    /// The broker (`url`); the default is the local one, mqtt://127.0.0.1:1883.
    package var host = "127.0.0.1"
    package var port = 1883
    /// TLS (an mqtts:// URL) with these files; nil is plain TCP.
    package var tls: StreamConnection.TLSFiles?
    /// Topic filters to subscribe to (`topics`).
    package var topics: [String] = []
    /// `types_from_topic`: the record type is this level of the topic.
    package var typePattern: MQTTTypePattern?
    /// `topic_types`: a record type per topic filter (each also subscribed
    /// to); the first filter that matches a message's topic names its type.
    package var topicTypes: [MQTTTopicType] = []
    /// The session's name at the broker; stable across restarts, so the
    /// broker keeps what arrives while the agent is away.
    package var clientID: String
    package var username: String?
    /// From `password_file` or the credential `mqtt-password`; never logged.
    package var password: String?
    /// How long the broker keeps the session (and its messages) after the
    /// agent disconnects (MQTT 5). The default is 7 days.
    package var sessionExpirySeconds: UInt32 = 7 * 24 * 3600
    package var keepAliveSeconds: UInt16 = 60
    /// MQTT 5 (the default) or 3.1.1.
    package var version5 = true
    /// Unacknowledged messages the broker may send at once (MQTT 5 Receive Maximum). The default is 1000.
    package var receiveMaximum: UInt16 = 1000
    /// A message larger than this is refused (counted, reported and
    /// acknowledged) without being buffered whole. The default is 1 MiB.
    package var maxMessageBytes = 1 << 20
    package var connectTimeoutMilliseconds = 10_000
    /// How long the `_id`s of received readings are remembered (in the
    /// queue file), so a message the broker sends again after a crash stores
    /// nothing twice; 0 turns it off. The default is 1 hour.
    package var dedupWindowSeconds: Int64 = 3600

    package init(clientID: String) {
        self.clientID = clientID
    }

    /// The filters subscribed to: `topics`, `topic_types`' filters, and
    /// the `types_from_topic` pattern (`{type}` as `+`) unless `topics` is
    /// set — without those another covers, as a broker sends a message once
    /// per matching subscription (a reading without `_id` would be stored twice).
    var subscriptions: [String] {
        var filters = topics
        if topics.isEmpty, let typePattern { filters.append(typePattern.filter) }
        filters += topicTypes.map(\.filter)
        return MQTTTopicFilter.withoutCovered(filters)
    }

    /// The record type a message's topic names: `topic_types`' first
    /// matching filter, else the `types_from_topic` level; nil for the
    /// input's `type` (a reading's own `_type` wins over all of these).
    func recordType(ofTopic topic: String) -> String? {
        if let entry = topicTypes.first(where: { MQTTTopicFilter.matches($0.filter, topic) }) { return entry.type }
        return typePattern?.type(in: topic)
    }

    /// The broker as a URL, for logs and status (no credentials in it).
    package var url: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return "\(tls == nil ? "mqtt" : "mqtts")://\(host):\(port)"
    }
}

/// One `topic_types` entry: messages on topics matching `filter` are of record type `type`.
package struct MQTTTopicType: Sendable, Hashable {
    package var filter: String
    package var type: String

    package init(filter: String, type: String) {
        self.filter = filter
        self.type = type
    }
}
