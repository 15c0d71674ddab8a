import Logging

/// Publishes confirmed records into a NATS JetStream stream, exactly once:
/// each record is its own message with `Nats-Msg-Id: <_id>`, so a re-send
/// (after a lost acknowledgement, a crash, or through another gateway) is
/// dropped by the stream within its duplicate window. A batch is stored,
/// and its records deleted from the queue, only once every message has its
/// PubAck; a PubAck that says `duplicate` counts as stored (and as a
/// duplicate the stream dropped).
///
/// Publishing is asynchronous with a bounded window (``JetStreamSettings/maxPending``
/// messages without their PubAck), on the uploader's thread, over the
/// project's own NATS client (``NATSConnection``): no library thread, every
/// read bounded.
package final class JetStreamSink: BatchSink {
    let settings: JetStreamSettings
    private var connection: NATSConnection?
    private var stream: JetStreamStream?
    /// The server to try first at the next connection.
    private var nextServer = 0
    private var lastServer: NATSServerAddress?
    private var logger: Logger?
    private var state: UploadState?
    /// The reply subjects' counter: record `i` of a batch answers on `inbox + (base + i)`.
    private var sequence = 0
    /// When each batch still unconfirmed was first published (monotonic ms), by idempotency key.
    private var firstPublished: [String: Int64] = [:]
    /// The duplicate windows already warned about.
    private var warnedWindow: Double?
    private let headerTail: [UInt8]

    package init(settings: JetStreamSettings) {
        self.settings = settings
        headerTail = Array("\r\nNats-Expected-Stream: \(settings.stream)\r\n\r\n".utf8)
    }

    package var description: String { settings.description }

    package var deliveryTimeLimitMilliseconds: Int? {
        settings.connectTimeoutMilliseconds * max(1, settings.servers.count) + settings.timeoutMilliseconds * 3
    }

    package func attach(logger: Logger) { self.logger = logger }
    package func attach(state: UploadState) { self.state = state }

    package func deliver(_ batch: SinkBatch) -> UploadOutcome {
        do {
            let connection = try connected()
            let rejected = try publish(batch, connection)
            firstPublished[batch.idempotencyKey] = nil
            lastActivity = monotonicMilliseconds()
            return .stored(rejected: rejected)
        } catch {
            switch error.kind {
            case .configuration, .refused:
                close()
                return .hold(reason: error.message)
            case .transient:
                close()  // the next attempt starts on a fresh connection, with the next server
                nextServer += 1
                return .retry(reason: error.message, retryAfterSeconds: nil)
            case .tooLarge:
                close()  // the server closes the connection after a payload or control line over its limit
                return .tooLarge
            case .badRecord:
                close()
                return .badBatch(reason: error.message)
            }
        }
    }

    // MARK: - Connection

    private func close() {
        connection = nil
        stream = nil
    }

    /// When a batch was last stored: a connection idle for longer may have
    /// been dropped by the server for unanswered PINGs (they are read only
    /// while delivering), so it is replaced before the next batch.
    private var lastActivity: Int64 = 0
    static let idleReconnectMilliseconds: Int64 = 60_000

    private func connected() throws(JetStreamError) -> NATSConnection {
        if connection != nil, monotonicMilliseconds() - lastActivity > Self.idleReconnectMilliseconds { close() }
        if let connection { return connection }
        var failures: [String] = []
        for offset in 0..<settings.servers.count {
            let server = settings.servers[(nextServer + offset) % settings.servers.count]
            do {
                let connection = try NATSConnection.open(server, settings: settings)
                let (stream, created) = try JetStreamStream.check(on: connection, settings)
                nextServer = (nextServer + offset) % settings.servers.count
                self.connection = connection
                self.stream = stream
                announce(server, stream, created: created)
                return connection
            } catch {
                // Credentials and a missing stream are the same on every member: say so at once.
                if error.kind != .transient { throw error }
                failures.append(error.message)
            }
        }
        throw JetStreamError(
            .transient,
            failures.count == 1 ? failures[0] : "no NATS server answered: " + failures.joined(separator: "; ")
        )
    }

    private func announce(_ server: NATSServerAddress, _ stream: JetStreamStream, created: Bool) {
        let window = Self.duration(stream.duplicateWindowSeconds)
        if created {
            logger?.notice(
                "Created the JetStream stream",
                metadata: [
                    "jetstream.stream": "\(stream.name)",
                    "jetstream.subjects": "\(stream.subjects.joined(separator: " "))",
                    "jetstream.replicas": "\(stream.replicas)", "jetstream.duplicate_window": "\(window)",
                ]
            )
        }
        if lastServer != server {
            logger?.log(
                level: lastServer == nil ? .info : .notice,
                lastServer == nil ? "Connected to NATS" : "Connected to another NATS server",
                metadata: [
                    "nats.server": "\(server)", "jetstream.stream": "\(stream.name)",
                    "jetstream.replicas": "\(stream.replicas)", "jetstream.duplicate_window": "\(window)",
                ]
            )
            lastServer = server
        }
        if stream.duplicateWindowSeconds < Double(settings.resendWithinSeconds),
            warnedWindow != stream.duplicateWindowSeconds
        {
            warnedWindow = stream.duplicateWindowSeconds
            logger?.warning(
                "The stream's duplicate window is shorter than a re-send can take: a record re-sent after it may be stored twice",
                metadata: [
                    "jetstream.stream": "\(stream.name)", "jetstream.duplicate_window": "\(window)",
                    "jetstream.resend_within": "\(Self.duration(Double(settings.resendWithinSeconds)))",
                    "hint":
                        "raise the stream's duplicate_window to at least that (nats stream edit --dupe-window), or lower upload.retry_cap_ms",
                ]
            )
        }
    }

    static func duration(_ seconds: Double) -> String {
        if seconds >= 3600, seconds.truncatingRemainder(dividingBy: 3600) == 0 { return "\(Int(seconds / 3600))h" }
        if seconds >= 60, seconds.truncatingRemainder(dividingBy: 60) == 0 { return "\(Int(seconds / 60))m" }
        return seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(seconds)s"
    }

    // MARK: - Publishing

    /// Publishes every record of `batch` and waits for each PubAck; returns
    /// the records refused one by one.
    private func publish(_ batch: SinkBatch, _ connection: NATSConnection) throws(JetStreamError) -> [RecordRejection] {
        noteResend(batch)
        let base = sequence
        sequence += batch.recordCount
        var acknowledged = [Bool](repeating: false, count: batch.recordCount)
        var outstanding = 0
        var rejected: [RecordRejection] = []
        var duplicates = 0
        var deadline = monotonicMilliseconds() + Int64(settings.timeoutMilliseconds)

        /// Takes one answer; false when none came in time.
        /// Takes one answer, waiting until `limit` at most; false when none
        /// came. Checked first: a server sending anything else must not keep
        /// the batch waiting.
        func takeAnswer(waitingUntil limit: Int64) throws(JetStreamError) -> Bool {
            guard monotonicMilliseconds() <= limit, let operation = try connection.next(until: limit) else {
                return false
            }
            switch operation {
            case .message(let subject, let status, let payload):
                guard
                    let index = Self.index(of: subject, inbox: connection.inbox, base: base, count: batch.recordCount),
                    !acknowledged[index]
                else { return true }  // a late answer to an earlier batch
                let answer = try PubAck.read(status: status, payload, stream: settings.stream)
                guard answer != .notAPubAck else { return true }
                acknowledged[index] = true
                outstanding -= 1
                deadline = monotonicMilliseconds() + Int64(settings.timeoutMilliseconds)
                switch answer {
                case .stored, .notAPubAck: break
                case .duplicate: duplicates += 1
                case .rejected(let reason): rejected.append(RecordRejection(index: index, reason: reason))
                }
            case .error(let text): throw JetStreamError.fromServerError(text, server: connection.server)
            default: break
            }
            return true
        }

        var out: [UInt8] = []
        out.reserveCapacity(min(batch.payload.count + batch.recordCount * 160, 1 << 21))
        let wanted = [RecordType.primaryKey] + settings.subject.fields
        // Without field placeholders every record of the batch has the same subject: made and checked once.
        var fixedSubject: [UInt8]?
        if settings.subject.fields.isEmpty {
            let subject = settings.subject.render(type: batch.type, clientID: settings.clientID) { _ in nil }
            try checkCovered(subject)
            fixedSubject = Array(subject.utf8)
        }
        let reply = Array(" \(connection.inbox)".utf8)
        let maxPayload = connection.info.maxPayload
        var failure: JetStreamError?
        batch.forEachRecord { index, line in
            guard failure == nil else { return }
            do throws(JetStreamError) {
                var id = Self.leadingID(line).map { Array(line[$0]) }
                var subject = fixedSubject
                if id == nil || subject == nil {
                    let values =
                        FlatRecordScan.values(line, wanted: wanted) ?? MQTTSink.parsedValues(line, wanted: wanted)
                    id = id ?? values[RecordType.primaryKey].map { Array($0.utf8) }
                    if subject == nil {
                        let rendered = settings.subject.render(type: batch.type, clientID: settings.clientID) {
                            values[$0]
                        }
                        try checkCovered(rendered)
                        subject = Array(rendered.utf8)
                    }
                }
                guard let id, !id.isEmpty, !id.contains(13), !id.contains(10), let subject else {
                    rejected.append(RecordRejection(index: index, reason: "the record has no _id to deduplicate by"))
                    acknowledged[index] = true
                    return
                }
                guard subject.count <= Self.maxSubjectBytes else {
                    rejected.append(
                        RecordRejection(
                            index: index,
                            reason:
                                "the subject made from this record is \(subject.count) bytes; a NATS server takes control lines of 4096 bytes"
                        )
                    )
                    acknowledged[index] = true
                    return
                }
                // The header block without the control line's CRLF.
                let headerBytes = Self.headerStart.count - 2 + id.count + headerTail.count
                guard headerBytes + line.count <= maxPayload else {
                    rejected.append(
                        RecordRejection(
                            index: index,
                            reason:
                                "the message of \(headerBytes + line.count) bytes is larger than the server's max_payload (\(maxPayload))"
                        )
                    )
                    acknowledged[index] = true
                    return
                }
                // HPUB <subject> <reply> <header bytes> <total bytes>\r\n<headers><record>\r\n
                out += Self.hpub
                out += subject
                out += reply
                Self.appendDecimal(base + index, to: &out)
                out.append(32)
                Self.appendDecimal(headerBytes, to: &out)
                out.append(32)
                Self.appendDecimal(headerBytes + line.count, to: &out)
                out += Self.headerStart
                out += id
                out += headerTail
                out.append(contentsOf: line)
                out += [13, 10]
                outstanding += 1
                if out.count >= 256 * 1024 || outstanding >= settings.maxPending {
                    try connection.send(out)
                    out.removeAll(keepingCapacity: true)
                    // Take what PubAcks are there: unread, they would fill the server's
                    // socket buffer and it would drop this connection as a slow consumer.
                    while try takeAnswer(waitingUntil: monotonicMilliseconds()) {}
                    while outstanding >= settings.maxPending {
                        guard try takeAnswer(waitingUntil: deadline) else {
                            throw JetStreamError(
                                .transient,
                                "no PubAck from \(connection.server) in \(settings.timeoutMilliseconds) ms"
                            )
                        }
                    }
                }
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        if !out.isEmpty { try connection.send(out) }
        while outstanding > 0 {
            guard try takeAnswer(waitingUntil: deadline) else {
                throw JetStreamError(
                    .transient,
                    "no PubAck from \(connection.server) for \(outstanding) of \(batch.recordCount) messages in \(settings.timeoutMilliseconds) ms"
                )
            }
        }
        if duplicates > 0 { state?.update { $0.duplicatesDropped += Int64(duplicates) } }
        return rejected
    }

    /// Subjects already found to be among the stream's (bounded).
    private var coveredSubjects: Set<String> = []

    /// A subject outside the stream's subjects is a configuration problem
    /// (hold); "no responders" for a covered one is a node not ready yet
    /// (retry).
    private func checkCovered(_ subject: String) throws(JetStreamError) {
        guard !coveredSubjects.contains(subject), let stream, !stream.subjects.isEmpty else { return }
        guard stream.subjects.contains(where: { NATSSubject.matches(subject, filter: $0) }) else {
            throw JetStreamError(
                .configuration,
                "the subject '\(subject.prefix(120))' is not one of stream \(stream.name)'s subjects (\(stream.subjects.joined(separator: ", ").prefix(200))): change upload.subject or the stream's subjects"
            )
        }
        if coveredSubjects.count >= 10_000 { coveredSubjects.removeAll() }
        coveredSubjects.insert(subject)
    }

    /// Counts and logs a re-send later than the stream's duplicate window:
    /// those records may now be stored twice.
    private func noteResend(_ batch: SinkBatch) {
        let now = monotonicMilliseconds()
        guard let first = firstPublished[batch.idempotencyKey] else {
            if firstPublished.count >= 10_000 { firstPublished.removeAll() }
            firstPublished[batch.idempotencyKey] = now
            return
        }
        guard let window = stream?.duplicateWindowSeconds, Double(now - first) / 1000 > window else { return }
        state?.update { $0.potentialDuplicates += Int64(batch.recordCount) }
        logger?.warning(
            "Re-sending records first published longer ago than the stream's duplicate window: they may be stored twice",
            metadata: [
                "records": "\(batch.recordCount)", "first_published_s_ago": "\((now - first) / 1000)",
                "jetstream.duplicate_window": "\(Self.duration(window))",
            ]
        )
        firstPublished[batch.idempotencyKey] = now  // counted once per window
    }

    static let hpub = Array("HPUB ".utf8)
    /// A subject that leaves room in the server's 4096-byte control line
    /// (its default `max_control_line`) for the reply subject and sizes.
    static let maxSubjectBytes = 3_900
    /// The control line's end and the header block up to the message id.
    static let headerStart = Array("\r\nNATS/1.0\r\nNats-Msg-Id: ".utf8)

    /// Where the `_id` string of a line the queue wrote is (the queue puts
    /// it first: `{"_id":"…"`), or nil when the line is not so simple.
    static func leadingID(_ line: UnsafeRawBufferPointer) -> Range<Int>? {
        let start = 8
        guard line.count > start + 1, line[0] == 0x7B, line[1] == 0x22, line[2] == 0x5F, line[3] == 0x69,
            line[4] == 0x64, line[5] == 0x22, line[6] == 0x3A, line[7] == 0x22
        else { return nil }
        var i = start
        while i < line.count, i < start + 200 {
            let byte = line[i]
            if byte == 0x22 { return i > start ? start..<i : nil }
            if byte == 0x5C || byte < 0x20 { return nil }  // an escape: the slow path decodes it
            i += 1
        }
        return nil
    }

    /// Appends a non-negative integer in decimal.
    static func appendDecimal(_ value: Int, to out: inout [UInt8]) {
        var divisor = 1
        while divisor <= value / 10 { divisor *= 10 }
        var rest = value
        while divisor > 0 {
            out.append(UInt8(48 + rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }

    /// The batch index a reply subject answers, or nil.
    static func index(of subject: String, inbox: String, base: Int, count: Int) -> Int? {
        var utf8 = subject.utf8[...]
        guard utf8.starts(with: inbox.utf8) else { return nil }
        utf8 = utf8.dropFirst(inbox.utf8.count)
        var n = 0
        for byte in utf8 {
            guard byte >= 48, byte <= 57, n < Int.max / 10 else { return nil }
            n = n * 10 + Int(byte - 48)
        }
        guard !utf8.isEmpty, n >= base, n < base + count else { return nil }
        return n - base
    }
}

/// A JetStream publish acknowledgement, read.
enum PubAck: Equatable {
    case stored, duplicate
    /// The stream refused this message alone (too large for the stream).
    case rejected(String)
    /// Not an answer from the stream (another subscriber of the subject
    /// replied): ignored, the stream's own PubAck is still awaited.
    case notAPubAck

    /// Reads one answer to a publish; throws for what concerns every
    /// message (the wrong stream, JetStream unavailable).
    static func read(status: Int?, _ payload: [UInt8], stream: String) throws(JetStreamError) -> PubAck {
        if status == 503 {
            // The subject is among the stream's (checked before publishing):
            // a node just started, or the stream is moving its leader.
            throw JetStreamError(
                .transient,
                "no JetStream server answered for stream \(stream) (no responders): a node starting or a leader election"
            )
        }
        guard status == nil else { return .notAPubAck }
        if isPlainAck(payload, stream: stream) { return .stored }
        guard let value = try? JSONValue.parse(payload), value.members != nil else { return .notAPubAck }
        if let error = value["error"] {
            let code = error["err_code"]?.int64 ?? 0
            let description = String((error["description"]?.string ?? "an error").prefix(200))
            switch code {
            case 10054: return .rejected("the stream refused the message: \(description)")  // larger than max_msg_size
            case 10060:
                throw JetStreamError(
                    .configuration,
                    "the subject belongs to another stream than \(stream) (\(description)): check upload.subject and upload.stream"
                )
            default:
                // Leader elections, no quorum, a full stream (discard new): try again later.
                throw JetStreamError(.transient, "the stream \(stream) did not store a message: \(description)")
            }
        }
        // A PubAck names the stream and the sequence it stored the message at.
        guard value["stream"]?.string == stream, let sequence = value["seq"]?.int64, sequence > 0 else {
            return .notAPubAck
        }
        return value["duplicate"]?.bool == true ? .duplicate : .stored
    }

    /// Whether `payload` is exactly `{"stream":"<stream>", "seq":<n>}` with
    /// n > 0, as nats-server writes a PubAck for a new message: read
    /// without building a JSON value (one per record).
    static func isPlainAck(_ payload: [UInt8], stream: String) -> Bool {
        let head = #"{"stream":""#.utf8
        let middle = #"", "seq":"#.utf8
        let name = stream.utf8
        let digitsStart = head.count + name.count + middle.count
        guard payload.count > digitsStart + 1, payload.last == UInt8(ascii: "}") else { return false }
        guard payload[0..<head.count].elementsEqual(head),
            payload[head.count..<(head.count + name.count)].elementsEqual(name),
            payload[(head.count + name.count)..<digitsStart].elementsEqual(middle)
        else { return false }
        let digits = payload[digitsStart..<(payload.count - 1)]
        return !digits.isEmpty && digits.count <= 19 && digits.allSatisfy { $0 >= 48 && $0 <= 57 }
            && digits.contains { $0 != 48 }
    }
}

/// NATS subject matching: `*` matches one token, `>` the rest (one or more).
enum NATSSubject {
    static func matches(_ subject: String, filter: String) -> Bool {
        let tokens = subject.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        let parts = filter.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        for (i, part) in parts.enumerated() {
            if part.elementsEqual(">".utf8) { return tokens.count > i }
            guard i < tokens.count else { return false }
            if part.elementsEqual("*".utf8) { continue }
            guard part.elementsEqual(tokens[i]) else { return false }
        }
        return tokens.count == parts.count
    }
}
