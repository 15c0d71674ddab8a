#if canImport(Glibc)
import Glibc
#endif

/// Publishes confirmed records to an MQTT broker (libmosquitto, MQTT 5 or
/// 3.1.1): one message per record (its JSON) or per batch (NDJSON), at
/// QoS 1 by default. A batch is stored — and its records deleted from the
/// queue — only once the broker acknowledged every message of it (PUBACK,
/// or PUBCOMP at QoS 2); a lost connection or a timeout sends the whole
/// batch again, with the same `_id`s in the messages' user properties, so
/// a consumer can drop repeats (at least once).
///
/// All of libmosquitto's work happens on the uploader's thread, in
/// ``deliver(_:)`` (`mosquitto_loop`, no thread of its own): its callbacks
/// run there too.
package final class MQTTSink: BatchSink {
    let settings: MQTTSettings
    /// Loaded at the first connection: a missing libmosquitto is a hold, not
    /// a sink that cannot be built (which would stop the uploader).
    private var library: LibMosquitto?
    private var client: LibMosquitto.Client?
    /// Set by the callbacks, during `mosquitto_loop` on this thread.
    private var connack: Int32?
    private var lost = false
    /// The broker's reason when it disconnected us (MQTT 5), else 0.
    private var disconnectReason: Int32 = 0
    private var acknowledged: [Int32: Int32] = [:]
    /// When the connection last did anything: an idle one may be dead (the
    /// broker drops a client that sent no PINGREQ for 1.5 keep-alives).
    private var lastActivity: Int64 = 0

    package init(settings: MQTTSettings) {
        self.settings = settings
    }

    deinit { close() }

    package var description: String { settings.description }

    package var deliveryTimeLimitMilliseconds: Int? {
        settings.connectTimeoutMilliseconds + settings.timeoutMilliseconds + 5_000
    }

    package func deliver(_ batch: SinkBatch) -> UploadOutcome {
        do {
            let library = try loaded()
            try connect(library)
            let mids = try publish(batch, library)
            try waitForAcknowledgements(mids, library)
            lastActivity = monotonicMilliseconds()
            return .stored(rejected: [])
        } catch {
            close()  // a new connection (and session) next time: the batch is sent again whole
            switch error.kind {
            case .configuration, .refused: return .hold(reason: error.message)
            case .transient: return .retry(reason: error.message, retryAfterSeconds: nil)
            case .tooLarge: return .tooLarge
            case .badRecord: return .badBatch(reason: error.message)
            }
        }
    }

    private func loaded() throws(MQTTError) -> LibMosquitto {
        if let library { return library }
        let library = try LibMosquitto.shared()
        self.library = library
        return library
    }

    // MARK: - Connection

    private func connect(_ library: LibMosquitto) throws(MQTTError) {
        let idle = monotonicMilliseconds() - lastActivity
        if client != nil, !lost, idle < Int64(settings.keepAliveSeconds) * 1000 { return }
        close()
        guard let client = library.new(settings.clientID, true, Unmanaged.passUnretained(self).toOpaque()) else {
            throw MQTTError(.transient, "libmosquitto could not make a client (out of memory?)")
        }
        self.client = client
        connack = nil
        lost = false
        disconnectReason = 0
        acknowledged = [:]
        _ = library.intOption(
            client,
            LibMosquitto.optionProtocolVersion,
            settings.version5 ? LibMosquitto.protocolV5 : LibMosquitto.protocolV311
        )
        // Without it, the last messages of a batch wait for delayed ACKs
        // (~40 ms per batch on loopback; measured in docs/BENCHMARKS.md).
        _ = library.intOption(client, LibMosquitto.optionTCPNoDelay, 1)
        library.connectV5CallbackSet(client) { _, context, code, _, _ in
            guard let context else { return }
            Unmanaged<MQTTSink>.fromOpaque(context).takeUnretainedValue().connack = code
        }
        library.publishV5CallbackSet(client) { _, context, mid, reason, _ in
            guard let context else { return }
            Unmanaged<MQTTSink>.fromOpaque(context).takeUnretainedValue().acknowledged[mid] = reason
        }
        library.disconnectV5CallbackSet(client) { _, context, reason, _ in
            guard let context else { return }
            let sink = Unmanaged<MQTTSink>.fromOpaque(context).takeUnretainedValue()
            sink.lost = true
            sink.disconnectReason = reason
        }
        if settings.username != nil || settings.password != nil {
            _ = library.usernamePasswordSet(client, settings.username, settings.password)
        }
        if settings.tls {
            let rc = library.tlsSet(
                client,
                settings.caFile,
                settings.caFile == nil ? "/etc/ssl/certs" : nil,
                settings.clientCertificate,
                settings.clientKey,
                nil
            )
            guard rc == LibMosquitto.success else {
                throw MQTTError(.configuration, "the TLS files were refused: \(library.errorText(rc))")
            }
        }
        // Not blocking: the TCP connection completes in mosquitto_loop, within
        // connect_timeout_ms (a blocking connect to a host that drops packets
        // takes the kernel's two minutes).
        let rc = library.connectBindAsync(client, settings.host, Int32(settings.port), settings.keepAliveSeconds, nil)
        guard rc == LibMosquitto.success else {
            throw MQTTError(.transient, "cannot connect to \(settings.host):\(settings.port): \(library.errorText(rc))")
        }
        let deadline = monotonicMilliseconds() + Int64(settings.connectTimeoutMilliseconds)
        while connack == nil {
            do {
                try loopOnce(library, until: deadline, doing: "connecting to \(settings.host):\(settings.port)")
            } catch {
                // A refusal comes with the connection closed right after it: the CONNACK says why.
                if connack != nil { break }
                throw error
            }
        }
        guard let code = connack, code == 0 else {
            let code = connack ?? -1
            // v5: 134 bad user name or password, 135 not authorized; 3.1.1: 4 and 5.
            let refusedCredentials = settings.version5 ? (code == 134 || code == 135) : (code == 4 || code == 5)
            if settings.version5, code == 132 {
                throw MQTTError(.refused, "the broker does not speak MQTT 5: set upload.mqtt_version = \"3.1.1\"")
            }
            let text =
                settings.version5
                ? library.reasonText(code) : (library.connackString(code).map { String(cString: $0) } ?? "\(code)")
            throw MQTTError(
                refusedCredentials ? .refused : .transient,
                "the broker refused the connection: \(text)\(refusedCredentials ? " (check upload.username and upload.password_file)" : "")"
            )
        }
    }

    private func close() {
        guard let client, let library else { return }
        if !lost { _ = library.disconnect(client) }
        library.destroy(client)
        self.client = nil
    }

    private func loopOnce(_ library: LibMosquitto, until deadline: Int64, doing what: String) throws(MQTTError) {
        let left = deadline - monotonicMilliseconds()
        guard left > 0 else { throw MQTTError(.transient, "timed out \(what)") }
        // Acknowledge the broker's segments at once: a broker that leaves
        // Nagle's algorithm on (mosquitto's default) holds its last PUBACKs
        // of a batch until our delayed ACK, ~40 ms a batch (docs/BENCHMARKS.md).
        var on: Int32 = 1
        _ = setsockopt(
            library.socket(client),
            Int32(IPPROTO_TCP),
            TCP_QUICKACK,
            &on,
            socklen_t(MemoryLayout<Int32>.size)
        )
        let rc = library.loop(client, Int32(min(left, 100)), 1)
        guard rc == LibMosquitto.success, !lost else {
            lost = true
            if let takeover = takeover(what) { throw takeover }
            throw MQTTError(.transient, "the connection to the broker was lost \(what): \(library.errorText(rc))")
        }
    }

    /// libmosquitto's MOSQ_ERR_ERRNO and MOSQ_ERR_CONN_LOST.
    static let errnoError: Int32 = 14
    static let connectionLost: Int32 = 7
    /// MQTT 5's DISCONNECT reason "Session taken over" (0x8E).
    static let sessionTakenOver: Int32 = 0x8E

    /// The error for a connection the broker ended because another client
    /// took its client id, or nil when that is not why it ended.
    private func takeover(_ what: String) -> MQTTError? {
        guard disconnectReason == Self.sessionTakenOver else { return nil }
        return MQTTError(
            .transient,
            "the broker ended this connection \(what) because another client connected with the same client id '\(settings.clientID.prefix(80))' (session taken over): give each agent its own upload.client_id"
        )
    }

    // MARK: - Publishing

    /// Publishes the batch's messages; returns the ids to wait for (none at QoS 0).
    private func publish(_ batch: SinkBatch, _ library: LibMosquitto) throws(MQTTError) -> [Int32] {
        var mids: [Int32] = []
        var failure: MQTTError?
        if settings.message == .batch {
            let topic = settings.topic.render(type: batch.type, clientID: settings.clientID) { _ in nil }
            let properties = [
                ("idempotency-key", batch.idempotencyKey), ("record-type", batch.type),
                ("records", "\(batch.recordCount)"),
            ]
            batch.payload.withUnsafeBytes { bytes in
                do throws(MQTTError) { mids.append(try send(library, topic: topic, bytes, properties)) } catch {
                    failure = error
                }
            }
        } else {
            let wanted = [RecordType.primaryKey] + settings.topic.fields
            batch.forEachRecord { _, line in
                guard failure == nil else { return }
                let values = FlatRecordScan.values(line, wanted: wanted) ?? Self.parsedValues(line, wanted: wanted)
                let id = values[RecordType.primaryKey] ?? ""
                let topic = settings.topic.render(type: batch.type, clientID: settings.clientID) { values[$0] }
                do throws(MQTTError) {
                    mids.append(try send(library, topic: topic, line, [("_id", id)]))
                } catch {
                    failure = error
                }
            }
        }
        if let failure { throw failure }
        // At QoS 0 too: on_publish then says the message was written to the socket.
        return mids
    }

    /// The slow path of ``FlatRecordScan``: the whole line parsed (escapes, odd spacing).
    static func parsedValues(_ line: UnsafeRawBufferPointer, wanted: [String]) -> [String: String] {
        guard let value = try? JSONValue.parse(Array(line)) else { return [:] }
        var out: [String: String] = [:]
        for name in wanted {
            switch value[name] {
            case .string(let s)?: out[name] = s
            case .int(let i)?: out[name] = String(i)
            case .double(let d)?: out[name] = "\(d)"
            case .bool(let b)?: out[name] = b ? "true" : "false"
            default: break
            }
        }
        return out
    }

    private func send(
        _ library: LibMosquitto,
        topic: String,
        _ payload: UnsafeRawBufferPointer,
        _ userProperties: [(String, String)]
    ) throws(MQTTError) -> Int32 {
        var properties: LibMosquitto.Properties?
        defer { library.propertyFreeAll(&properties) }
        if settings.version5 {
            for (name, value) in userProperties where !value.isEmpty {
                _ = library.propertyAddStringPair(&properties, LibMosquitto.propertyUserProperty, name, value)
            }
        }
        var mid: Int32 = 0
        let rc = library.publishV5(
            client,
            &mid,
            topic,
            Int32(payload.count),
            payload.baseAddress,
            settings.qos,
            false,
            properties
        )
        guard rc == LibMosquitto.success else {
            let text = "publishing to '\(topic.prefix(80))' failed: \(library.errorText(rc))"
            switch rc {
            case 9, 25:  // payload too large, packet larger than the broker's maximum
                throw MQTTError(settings.message == .batch ? .tooLarge : .badRecord, text)
            case 3, 18:  // invalid (a topic made from a record's value), malformed UTF-8
                throw MQTTError(.badRecord, text)
            default:  // no connection, connection lost, errno, out of memory…
                // The broker's DISCONNECT, if it sent one, says why.
                _ = library.loop(client, 0, 1)
                if let takeover = takeover("while publishing") { throw takeover }
                if rc == Self.errnoError || rc == Self.connectionLost {
                    // An MQTT 3.1.1 broker (and mosquitto 2.0 for MQTT 5
                    // clients too) just closes the old connection when a
                    // client with the same id connects: say so, it is the
                    // common cause of a connection closed again and again.
                    throw MQTTError(
                        .transient,
                        text
                            + " (the broker closed the connection; a broker does so when another client connects with the same client id '\(settings.clientID.prefix(80))')"
                    )
                }
                throw MQTTError(.transient, text)
            }
        }
        return mid
    }

    /// Loops until every message in `mids` is acknowledged; a refusal by the
    /// broker (a reason code of 128 or more) is a hold for "not authorized"
    /// or a bad topic, a retry otherwise.
    private func waitForAcknowledgements(_ mids: [Int32], _ library: LibMosquitto) throws(MQTTError) {
        // The deadline moves with every acknowledgement: a slow link that
        // keeps acknowledging is not a timeout.
        var deadline = monotonicMilliseconds() + Int64(settings.timeoutMilliseconds)
        var pending = Set(mids)
        while true {
            let answers = acknowledged
            acknowledged = [:]
            for (mid, reason) in answers where pending.contains(mid) {
                pending.remove(mid)
                deadline = monotonicMilliseconds() + Int64(settings.timeoutMilliseconds)
                guard reason >= 0x80 else { continue }
                let text = "the broker refused a message: \(library.reasonText(reason))"
                switch reason {
                case 135, 144:  // not authorized, topic name invalid
                    throw MQTTError(.refused, text + " (check the topic and the broker's access rules)")
                case 149:  // packet too large
                    throw MQTTError(settings.message == .batch ? .tooLarge : .badRecord, text)
                default:
                    throw MQTTError(.transient, text)
                }
            }
            if pending.isEmpty { return }
            try loopOnce(library, until: deadline, doing: "waiting for \(pending.count) acknowledgements")
        }
    }
}
