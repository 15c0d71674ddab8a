import EdgeIngestCore
import Logging

/// One connection of an ``MQTTInput`` to its broker: CONNECT with a
/// persistent session, SUBSCRIBE at QoS 1, then messages into the input's
/// ``LineIngestor``. QoS 1 messages are acknowledged (PUBACK, in the order
/// received, as MQTT requires) only after everything read before them is
/// committed. A commit happens when the broker's window of unacknowledged
/// messages (`receive_maximum`) is half full, when the connection has been
/// quiet for 5 ms, or when the first message read since the last commit
/// has waited `commit_interval_ms` — so a busy stream commits hundreds of
/// messages per fsync and a quiet one is acknowledged at once
/// (docs/BENCHMARKS.md, "MQTT input").
/// A crash before the PUBACK makes the broker send the message again.
///
/// Runs on the input's thread; ``run(_:)`` returns when stopped and throws
/// ``MQTTInputFailure`` when the connection is refused or lost.
final class MQTTInputSession {
    let settings: MQTTInputSettings
    let context: InputContext
    let stop: StopSignal
    private let connection: StreamConnection
    private var reader: MQTTPacketReader
    private var pendingAcks: [UInt16] = []
    /// When the oldest message not yet committed was read.
    private var pendingSince: Double?
    private var lastSent = monotonicSeconds()
    private var pingSentAt: Double?
    private var connected = false
    /// Whether this process held a session before: a new one means the broker lost it.
    var expectSession = false
    /// Whether the broker accepted the connection (CONNACK).
    var isConnected: Bool { connected }
    private let subscribePacketID: UInt16 = 1

    init(settings: MQTTInputSettings, context: InputContext, stop: StopSignal) throws(MQTTInputFailure) {
        self.settings = settings
        self.context = context
        self.stop = stop
        reader = MQTTPacketReader(maxBodyBytes: settings.maxMessageBytes + 70_000)
        keepAlive = Double(settings.keepAliveSeconds)
        do {
            connection = try StreamConnection.open(
                host: settings.host,
                port: settings.port,
                tls: settings.tls,
                timeoutMilliseconds: settings.connectTimeoutMilliseconds,
                stop: stop
            )
        } catch {
            throw .lost(error.message)
        }
    }

    /// The keep-alive in force: ours, or the broker's Server Keep Alive (MQTT 5 says it wins).
    private var keepAlive: Double
    /// How long the connection must be quiet before what was read is committed:
    /// the broker is waiting for acknowledgements, or nothing more is coming now.
    static let quietSeconds = 0.005

    /// Connects, subscribes and reads until stopped (then commits what was
    /// read, acknowledges it and disconnects, keeping the session).
    func run(_ ingestor: inout LineIngestor) throws(MQTTInputFailure) {
        try send(
            MQTTPacketWriter.connect(
                clientID: settings.clientID,
                keepAliveSeconds: settings.keepAliveSeconds,
                cleanStart: false,
                sessionExpirySeconds: settings.sessionExpirySeconds,
                receiveMaximum: settings.receiveMaximum,
                username: settings.username,
                password: settings.password.map { Array($0.utf8) },
                version5: settings.version5
            )
        )
        let connectDeadline = monotonicSeconds() + Double(settings.connectTimeoutMilliseconds) / 1000
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var lastData = monotonicSeconds()
        while true {
            let started = monotonicSeconds()
            reading: while true {
                let read = buffer.withUnsafeMutableBytes { raw in
                    Result { () throws(StreamConnection.Failure) in try connection.read(into: raw) }
                }
                let result: StreamConnection.ReadResult
                switch read {
                case .success(let value): result = value
                case .failure(let failure): throw .lost(failure.message)
                }
                switch result {
                case .bytes(let n):
                    buffer.withUnsafeBytes { reader.append(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                    lastData = monotonicSeconds()
                    pingSentAt = nil  // any packet proves the broker alive
                    while let frame = try nextFrame() { try handle(frame, &ingestor) }
                    if pendingAcks.count >= max(1, Int(settings.receiveMaximum) / 2) {
                        try commitAndAcknowledge(&ingestor)
                    }
                    // A backlog must not deafen the loop to stop, pings and the commit interval.
                    if stop.isStopped || lastData - started > 0.1 { break reading }
                case .wouldBlock:
                    break reading
                case .closed:
                    // Unacknowledged messages come again: what was read of them is not committed.
                    throw .lost(
                        connected
                            ? "the broker closed the connection"
                            : "the broker closed the connection before answering CONNECT"
                    )
                }
            }
            var now = monotonicSeconds()
            // What was read is made durable and acknowledged once the connection is
            // quiet (the broker's window may be full) or the commit interval has passed.
            if let pendingSince,
                now - lastData >= Self.quietSeconds || now - pendingSince >= context.commitIntervalSeconds
            {
                try commitAndAcknowledge(&ingestor)
                now = monotonicSeconds()
            }
            if !connected, now > connectDeadline {
                throw .lost("no CONNACK in \(settings.connectTimeoutMilliseconds) ms")
            }
            if let pingSentAt, now - pingSentAt > keepAlive {
                throw .lost("no answer to a keep-alive ping in \(Int(keepAlive)) s")
            }
            if connected, pingSentAt == nil, now - lastSent >= keepAlive / 2 {
                try send(MQTTPacketWriter.pingreq)
                pingSentAt = now
            }
            var wait = Double(context.waitMilliseconds(pending: false)) / 1000
            if !connected {
                wait = min(wait, connectDeadline - now)
            } else if let pingSentAt {
                wait = min(wait, pingSentAt + keepAlive - now)
            } else {
                wait = min(wait, keepAlive / 2 - (now - lastSent))
            }
            if let pendingSince {
                wait = min(
                    wait,
                    Self.quietSeconds - (now - lastData),
                    context.commitIntervalSeconds - (now - pendingSince)
                )
            }
            switch Readiness.wait(fd: connection.fd, stop: stop, timeoutMs: Int32(max(0, wait) * 1000) + 1) {
            case .stopped:
                try commitAndAcknowledge(&ingestor)
                try? send(MQTTPacketWriter.disconnect)
                connection.shutdown()
                return
            case .timeout:
                context.counters.heartbeat()
            case .readable:
                break
            }
        }
    }

    private func nextFrame() throws(MQTTInputFailure) -> MQTTPacketReader.Frame? {
        do {
            return try reader.next()
        } catch {
            throw .protocolViolation(error.message)
        }
    }

    private func handle(_ frame: MQTTPacketReader.Frame, _ ingestor: inout LineIngestor) throws(MQTTInputFailure) {
        let version5 = settings.version5
        let packet: MQTTPacket
        do {
            // An oversized PUBLISH is kept only in part: read as 3.1.1, it still
            // gives its topic and packet id (before MQTT 5's properties), so
            // huge properties cannot make it undecodable and sent for ever.
            let decodeAs5 = version5 && !frame.truncated
            packet = try reader.withBody(of: frame) { body throws(MQTTProtocolError) in
                try MQTTPacket.decode(first: frame.first, body: body, version5: decodeAs5)
            }
        } catch {
            throw .protocolViolation(error.message)
        }
        if !connected {
            guard case .connack(let ack) = packet else {
                throw .protocolViolation("the broker's first packet was not CONNACK")
            }
            guard ack.reasonCode == 0 else {
                let text = MQTTReasonCode.connectRefusal(ack.reasonCode, version5: version5)
                let detail = ack.reasonString.map { " (\($0.prefix(200)))" } ?? ""
                throw MQTTReasonCode.isTransient(ack.reasonCode, version5: version5)
                    ? .lost("the broker refused the connection: \(text)\(detail)")
                    : .refused("the broker refused the connection: \(text)\(detail)")
            }
            connected = true
            let sessionPresent = ack.sessionPresent
            if let serverKeepAlive = ack.serverKeepAliveSeconds, serverKeepAlive > 0 {
                keepAlive = Double(serverKeepAlive)
            }
            let metadata: Logger.Metadata = [
                "ingest.input": "\(context.settings.name)", "ingest.broker": "\(settings.url)",
                "ingest.session": "\(sessionPresent ? "resumed" : "new")",
                "ingest.client_id": "\(settings.clientID)",
                "ingest.topics": "\(settings.subscriptions.joined(separator: ","))",
            ]
            if expectSession, !sessionPresent {
                context.logger.warning(
                    "The MQTT broker no longer had this input's session: what was published while the agent was disconnected is lost. Does the broker keep sessions across restarts (mosquitto: persistence true)?",
                    metadata: metadata
                )
            } else {
                context.logger.info(
                    sessionPresent
                        ? "Subscribed to the MQTT broker; its session was kept"
                        : "Subscribed to the MQTT broker with a new session",
                    metadata: metadata
                )
            }
            // Always subscribe: topics may have changed since the session
            // began. With MQTT 5, retained messages come only for new subscriptions.
            try send(
                MQTTPacketWriter.subscribe(
                    packetID: subscribePacketID,
                    filters: settings.subscriptions,
                    qos: 1,
                    version5: version5
                )
            )
            return
        }
        switch packet {
        case .publish(let message):
            try take(message, frame: frame, &ingestor)
        case .suback(let packetID, let codes):
            guard packetID == subscribePacketID else { return }
            let refused = zip(settings.subscriptions, codes).filter { $0.1 >= 0x80 }
            if !refused.isEmpty {
                let list = refused.map { "\"\($0.0.prefix(80))\" (\(MQTTReasonCode.subscribeRefusal($0.1)))" }
                    .joined(separator: ", ")
                context.counters.update { $0.problem = "the broker refused the subscription to \(list)" }
                context.logger.error(
                    "The MQTT broker refused a subscription; no messages come from it until the broker's access control allows it",
                    metadata: ["ingest.input": "\(context.settings.name)", "ingest.refused": "\(list)"]
                )
            } else {
                context.counters.update { $0.problem = nil }
            }
        case .pingresp, .other:
            break
        case .disconnect(let code, let reason):
            let detail = reason.map { " (\($0.prefix(200)))" } ?? ""
            throw .lost("the broker disconnected: \(MQTTReasonCode.disconnectReason(code))\(detail)")
        case .connack:
            throw .protocolViolation("a second CONNACK")
        }
    }

    private func take(
        _ message: MQTTPublish,
        frame: MQTTPacketReader.Frame,
        _ ingestor: inout LineIngestor
    ) throws(MQTTInputFailure) {
        guard message.qos < 2 else {
            throw .protocolViolation("a QoS 2 message on a subscription granted QoS 1")
        }
        let type = settings.recordType(ofTopic: message.topic)
        ingestor.beginMessage(type: type, origin: "the type the topic names (topic_types or types_from_topic)")
        let payloadLength = frame.length - message.payloadStart
        do {
            if frame.truncated || payloadLength > settings.maxMessageBytes {
                ingestor.refuseMessage(
                    LineRejection(
                        reason: "message_too_large",
                        message:
                            "a message of \(payloadLength) bytes on '\(message.topic.prefix(120))' is over the input's max_message_bytes of \(settings.maxMessageBytes)"
                    ),
                    length: payloadLength
                )
            } else {
                let delimiter = context.settings.delimiter
                try reader.withBody(of: frame) { body in
                    let payload = UnsafeRawBufferPointer(rebasing: body[message.payloadStart...])
                    guard !payload.isEmpty else { return }
                    try ingestor.feed(payload)
                    if payload.last != delimiter { try [delimiter].withUnsafeBytes { try ingestor.feed($0) } }
                }
            }
        } catch {
            throw .commitFailed(error)
        }
        if pendingSince == nil { pendingSince = monotonicSeconds() }
        if message.qos == 1, let id = message.packetID { pendingAcks.append(id) }
    }

    /// Commits everything read so far, then acknowledges the messages it came in.
    private func commitAndAcknowledge(_ ingestor: inout LineIngestor) throws(MQTTInputFailure) {
        guard ingestor.hasPending || !pendingAcks.isEmpty else { return }
        pendingSince = nil
        do {
            try ingestor.flushAndWait()
        } catch {
            throw .commitFailed(error)
        }
        guard !pendingAcks.isEmpty else { return }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(pendingAcks.count * 4)
        for id in pendingAcks { bytes += MQTTPacketWriter.puback(id) }
        pendingAcks.removeAll(keepingCapacity: true)
        try send(bytes)
    }

    private func send(_ bytes: [UInt8]) throws(MQTTInputFailure) {
        do {
            try connection.writeAll(bytes, timeoutMilliseconds: Int(min(30, max(5, keepAlive)) * 1000), stop: nil)
        } catch {
            throw .lost(error.message)
        }
        lastSent = monotonicSeconds()
    }
}

/// Why an MQTT input's connection ended.
enum MQTTInputFailure: Error {
    /// Unreachable, lost, or refused for a passing reason: reconnect with backoff.
    case lost(String)
    /// Refused for a reason that retrying will not change (credentials,
    /// authorisation): reconnect rarely and say so.
    case refused(String)
    /// The broker broke the protocol: reconnect with backoff.
    case protocolViolation(String)
    /// A commit failed: the input stops (its messages stay unacknowledged at the broker).
    case commitFailed(any Error)
}
