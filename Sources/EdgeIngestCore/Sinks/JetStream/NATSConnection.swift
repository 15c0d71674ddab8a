#if canImport(Glibc)
import Glibc
#endif

/// One client connection to a NATS server, owned by one thread (the
/// uploader's): the handshake (INFO, TLS when asked for, CONNECT with the
/// credentials, PING until PONG), one wildcard subscription for answers
/// (`_INBOX.<token>.>`), and bounded reads. PINGs from the server are
/// answered while reading.
///
///     let connection = try NATSConnection.open(server, settings: settings)
///     try connection.send(Array("PUB a.b 2\r\nhi\r\n".utf8))
///     let operation = try connection.next(until: monotonicMilliseconds() + 1_000)
final class NATSConnection {
    let server: NATSServerAddress
    let info: NATSServerInfo
    /// The answers' subject prefix: `_INBOX.<random>.`.
    let inbox: String
    private let stream: StreamConnection
    private var reader = NATSProtocolReader()
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    private let timeoutMilliseconds: Int

    private init(
        server: NATSServerAddress,
        stream: StreamConnection,
        reader: NATSProtocolReader,
        info: NATSServerInfo,
        timeoutMilliseconds: Int
    ) {
        self.server = server
        self.stream = stream
        self.reader = reader
        self.info = info
        self.timeoutMilliseconds = timeoutMilliseconds
        inbox =
            "_INBOX.\(String(UInt64.random(in: 1...UInt64.max), radix: 36)).\(String(UInt32.random(in: 1...UInt32.max), radix: 36))."
    }

    deinit { stream.shutdown() }

    /// Connects and completes the handshake within the connect timeout.
    static func open(_ server: NATSServerAddress, settings: JetStreamSettings) throws(JetStreamError) -> NATSConnection
    {
        let deadline = monotonicMilliseconds() + Int64(settings.connectTimeoutMilliseconds)
        let stream: StreamConnection
        do {
            stream = try StreamConnection.open(
                host: server.host,
                port: server.port,
                tls: nil,
                timeoutMilliseconds: settings.connectTimeoutMilliseconds,
                stop: nil
            )
        } catch {
            throw JetStreamError(.transient, "cannot reach the NATS server \(server): \(error.message)")
        }
        // The server speaks first: INFO.
        var reader = NATSProtocolReader()
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        var infoBytes: [UInt8]?
        while infoBytes == nil {
            let operation: NATSServerOperation?
            do throws(NATSProtocolError) { operation = try reader.next() } catch {
                throw JetStreamError(.transient, "\(server): \(error.message)")
            }
            switch operation {
            case .info(let bytes)?: infoBytes = bytes
            case .error(let text)?: throw JetStreamError(.transient, "the NATS server \(server) refused: \(text)")
            case nil:
                try readMore(
                    stream,
                    into: &chunk,
                    reader: &reader,
                    until: deadline,
                    doing: "waiting for \(server)'s INFO"
                )
            default: throw JetStreamError(.transient, "\(server) did not begin with INFO: is it a NATS server?")
            }
        }
        let info = NATSServerInfo(json: infoBytes ?? [])
        guard info.headers else {
            throw JetStreamError(
                .configuration,
                "the NATS server \(server) does not take message headers: JetStream's message ids need NATS 2.2 or newer"
            )
        }
        // TLS where the URL says tls:// or the server requires it (ca_file
        // alone does not turn it on for a nats:// server that does not).
        if server.tls || info.tlsRequired {
            guard server.tls || settings.tls != nil else {
                throw JetStreamError(
                    .configuration,
                    "the NATS server \(server) requires TLS: use tls://\(server.host):\(server.port) (and ca_file for a private CA)"
                )
            }
            do {
                try stream.startTLS(
                    settings.tls ?? StreamConnection.TLSFiles(),
                    host: server.host,
                    timeoutMilliseconds: max(1, Int(deadline - monotonicMilliseconds())),
                    stop: nil
                )
            } catch {
                throw JetStreamError(.transient, "\(server): \(error.message)")
            }
        }
        let connection = NATSConnection(
            server: server,
            stream: stream,
            reader: reader,
            info: info,
            timeoutMilliseconds: settings.timeoutMilliseconds
        )
        let connect = try settings.credentials.connectOptions(nonce: info.nonce, name: settings.clientID)
        var hello: [UInt8] = Array("CONNECT ".utf8)
        connect.write(to: &hello)
        hello += Array("\r\nSUB \(connection.inbox)> 1\r\nPING\r\n".utf8)
        try connection.send(hello)
        while true {
            switch try connection.next(until: deadline) {
            case .pong?: return connection
            case .error(let text)?: throw JetStreamError.fromServerError(text, server: server)
            case nil: throw JetStreamError(.transient, "\(server) did not finish the handshake in time")
            default:
                if monotonicMilliseconds() > deadline {
                    throw JetStreamError(.transient, "\(server) did not finish the handshake in time")
                }
            }
        }
    }

    /// Writes `bytes` whole, waiting for room at most the sink's timeout.
    func send(_ bytes: [UInt8]) throws(JetStreamError) {
        do {
            try stream.writeAll(bytes, timeoutMilliseconds: timeoutMilliseconds, stop: nil)
        } catch {
            throw JetStreamError(.transient, "the connection to \(server) was lost while publishing: \(error.message)")
        }
    }

    /// The next operation for the caller (PINGs are answered here), or nil
    /// when none came before `deadline` (monotonic milliseconds).
    func next(until deadline: Int64) throws(JetStreamError) -> NATSServerOperation? {
        while true {
            let operation: NATSServerOperation?
            do throws(NATSProtocolError) { operation = try reader.next() } catch {
                throw JetStreamError(.transient, "\(server): \(error.message)")
            }
            switch operation {
            case .ping?: try send(Array("PONG\r\n".utf8))
            case .ok?, .info?: break  // verbose is off; a new INFO only updates cluster URLs
            case let other?: return other
            case nil:
                do throws(JetStreamError) {
                    try Self.readMore(stream, into: &chunk, reader: &reader, until: deadline, doing: "")
                } catch {
                    if error.message.isEmpty { return nil }  // the deadline passed
                    throw error
                }
                continue
            }
            // A server sending only PINGs and INFOs must not keep the caller past its deadline.
            if monotonicMilliseconds() > deadline { return nil }
        }
    }

    /// One request and its answer (the JetStream API): nil status and the
    /// payload, or the header status (503: no one answers that subject).
    func request(_ subject: String, _ payload: [UInt8]) throws(JetStreamError) -> (status: Int?, payload: [UInt8]) {
        let reply = inbox + "api" + String(UInt32.random(in: 1...UInt32.max), radix: 36)
        try send(Array("PUB \(subject) \(reply) \(payload.count)\r\n".utf8) + payload + [13, 10])
        let deadline = monotonicMilliseconds() + Int64(timeoutMilliseconds)
        while true {
            switch try next(until: deadline) {
            case .message(let subject, let status, let body)? where subject == reply: return (status, body)
            case .error(let text)?: throw JetStreamError.fromServerError(text, server: server)
            case nil:
                throw JetStreamError(
                    .transient,
                    "no answer from \(server) to a JetStream request in \(timeoutMilliseconds) ms"
                )
            default:  // a late publish acknowledgement of an earlier batch
                if monotonicMilliseconds() > deadline {
                    throw JetStreamError(
                        .transient,
                        "no answer from \(server) to a JetStream request in \(timeoutMilliseconds) ms"
                    )
                }
            }
        }
    }

    /// Reads what is there into `reader`, waiting until `deadline` for
    /// something. Throws an empty message when the deadline passes.
    private static func readMore(
        _ stream: StreamConnection,
        into chunk: inout [UInt8],
        reader: inout NATSProtocolReader,
        until deadline: Int64,
        doing what: String
    ) throws(JetStreamError) {
        while true {
            var failure: StreamConnection.Failure?
            let read = chunk.withUnsafeMutableBytes { raw -> StreamConnection.ReadResult? in
                do throws(StreamConnection.Failure) { return try stream.read(into: raw) } catch {
                    failure = error
                    return nil
                }
            }
            guard let result = read else {
                throw JetStreamError(
                    .transient,
                    "the connection to the NATS server was lost: \(failure?.message ?? "read failed")"
                )
            }
            switch result {
            case .bytes(let n):
                chunk.withUnsafeBytes { reader.append(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
                return
            case .closed: throw JetStreamError(.transient, "the NATS server closed the connection")
            case .wouldBlock:
                let left = deadline - monotonicMilliseconds()
                guard left > 0 else {
                    throw JetStreamError(.transient, what.isEmpty ? "" : "timed out \(what)")
                }
                var descriptor = pollfd(fd: stream.fd, events: Int16(POLLIN), revents: 0)
                _ = poll(&descriptor, 1, Int32(min(left, 1_000)))
            }
        }
    }
}

/// What the sink reads of a server's INFO.
struct NATSServerInfo: Sendable {
    /// The largest message the server takes (its `max_payload`; 1 MiB by default).
    var maxPayload = 1 << 20
    var tlsRequired = false
    var nonce: String?
    /// Whether it takes HPUB (NATS 2.2 and newer).
    var headers = false

    init(json: [UInt8]) {
        guard let value = try? JSONValue.parse(json) else { return }
        if let n = value["max_payload"]?.int64, n > 0 { maxPayload = Int(n) }
        tlsRequired = value["tls_required"]?.bool ?? false
        nonce = value["nonce"]?.string
        headers = value["headers"]?.bool ?? false
    }
}
