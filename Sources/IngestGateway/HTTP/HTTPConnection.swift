import CCrypto
import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// Limits that keep one slow or hostile client from holding the server.
package struct HTTPLimits: Sendable, Hashable {
    /// Request line and headers together.
    package var maxHeadBytes = 16 * 1024
    /// A body announced larger is answered 413 without being read.
    package var maxBodyBytes = 2 << 20
    /// From a request's first byte to the end of its head: a client
    /// trickling its head (slowloris) is answered 408 and closed here.
    package var headTimeoutMilliseconds = 10_000
    /// From a request's first byte to its last.
    package var requestTimeoutMilliseconds = 30_000
    /// The slowest a body may arrive, on average since its head ended,
    /// once ``bodyRateGraceMilliseconds`` have passed: a client trickling
    /// a large body is cut off long before the request timeout.
    package var minBodyBytesPerSecond = 1024
    /// How long a body may arrive slower than ``minBodyBytesPerSecond``
    /// (a connection's slow start).
    package var bodyRateGraceMilliseconds = 2_000
    /// How long an idle keep-alive connection stays open.
    package var idleTimeoutMilliseconds = 60_000

    package init() {}
}

/// One accepted connection's reading side, as a state machine owned by the
/// event loop (``HTTPEventLoop``): it is told when the socket is readable
/// and what time it is, reads without blocking, cuts requests out of the
/// bytes (``HTTPRequestFramer``) and says when a deadline has passed. The
/// answer is written by the worker that ran the handler (``write(_:to:keepAlive:)``,
/// blocking with a deadline).
///
/// ```swift
/// var connection = HTTPConnection(fd: fd, limits: limits, now: monotonicMilliseconds())
/// switch connection.readable(now: monotonicMilliseconds()) {
/// case .request(let request): …  // to a worker
/// case .needMore: …  // wait for the socket, or for `deadline`
/// …
/// }
/// ```
// Unchecked: its `SSL *` is used by one thread at a time — the loop, or
// the worker that answers (the loop leaves a busy connection alone).
struct HTTPConnection: @unchecked Sendable {
    let fd: Int32
    /// The client's "host:port", for logs and the handler.
    let peer: String
    let limits: HTTPLimits
    /// Cuts the requests out of what arrives.
    private var framer: HTTPRequestFramer
    /// When the current request's first byte arrived; nil between requests.
    private(set) var requestStartedAt: Int64?
    /// When the current request's head ended and its body began to arrive.
    private var bodyStartedAt: Int64?
    /// Body bytes received since `bodyStartedAt`.
    private var bodyBytes = 0
    /// The last time bytes arrived or a request was answered.
    private(set) var lastActivityAt: Int64
    /// The connection's TLS (an `SSL *`, ``ServerTLS``), nil for plain HTTP.
    /// Freed by ``closeTLS()``, by the event loop only.
    let tls: OpaquePointer?
    private(set) var handshakeDone = false
    /// Why the TLS handshake failed, once it has.
    private(set) var handshakeFailure: String?
    /// With mutual TLS: the common name of the client's verified certificate.
    private(set) var clientCertificateName: String?

    init(fd: Int32, peer: String = "?", limits: HTTPLimits, now: Int64, tls: OpaquePointer? = nil) {
        self.fd = fd
        self.peer = peer
        self.limits = limits
        self.tls = tls
        lastActivityAt = now
        framer = HTTPRequestFramer(maxHeadBytes: limits.maxHeadBytes, maxBodyBytes: limits.maxBodyBytes)
    }

    enum Event: Equatable {
        case request(HTTPRequest)
        /// Nothing whole yet: wait for the socket (or the deadline).
        case needMore
        /// The client waits for `100 Continue` before its body: send it, then wait.
        case continueExpected
        /// Answer this and close.
        case refused(HTTPRequestError)
        /// The client closed or failed: close without an answer.
        case closed
    }

    /// Reads what the socket holds (without blocking; at most
    /// `maxReadBytes`, so one fast client cannot hold the loop), then
    /// frames the next request.
    mutating func readable(now: Int64, into chunk: inout [UInt8], maxReadBytes: Int = 256 * 1024) -> Event {
        if let ssl = tls, !handshakeDone {
            // The handshake counts against the head's deadline (a slow one is a slowloris too).
            if requestStartedAt == nil { requestStartedAt = now }
            lastActivityAt = now
            switch Self.handshake(ssl) {
            case .again:
                return .needMore
            case .failed(let reason):
                handshakeFailure = reason
                return .closed
            case .done:
                handshakeDone = true
                requestStartedAt = nil
                var name = [CChar](repeating: 0, count: 256)
                if edgeingest_tls_peer_common_name(ssl, &name, Int32(name.count)) > 0 {
                    clientCertificateName = String(cBuffer: name)
                }
            }
        }
        var read = 0
        // TLS: until OpenSSL has nothing left (bytes it decrypted wake no epoll).
        while read < maxReadBytes || tls != nil {
            let n = receive(into: &chunk)
            if n == -1 { break }  // would block
            if n < -1 { return .closed }
            if n == 0 {
                // End of file: a whole request before it is still answered
                // (the client may half-close after sending); one cut short is not.
                if case .request(let request) = next(now: now) { return .request(request) }
                return .closed
            }
            if requestStartedAt == nil { requestStartedAt = now }
            if bodyStartedAt != nil { bodyBytes += n }
            lastActivityAt = now
            framer.append(chunk[0..<n])
            read += n
            if tls == nil, n < chunk.count { break }  // drained
        }
        return next(now: now)
    }

    /// Bytes into `chunk`: their count; 0 at end of file, -1 when nothing
    /// is there now, -2 on an error.
    private func receive(into chunk: inout [UInt8]) -> Int {
        if let ssl = tls {
            ERR_clear_error()  // SSL_get_error reads the thread's error queue
            let n = chunk.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if n > 0 { return Int(n) }
            switch SSL_get_error(ssl, n) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: return -1
            case SSL_ERROR_ZERO_RETURN: return 0
            case SSL_ERROR_SYSCALL where errno == 0: return 0  // closed without close_notify
            default: return -2
            }
        }
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n >= 0 { return n }
            if errno == EINTR { continue }
            return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2
        }
    }

    private enum Handshake {
        case done, again
        case failed(String)
    }

    /// One step of the server's handshake; waits briefly (≤ 100 ms) only
    /// when OpenSSL must write and the socket is full.
    private static func handshake(_ ssl: OpaquePointer) -> Handshake {
        for _ in 0..<3 {
            ERR_clear_error()
            let result = SSL_do_handshake(ssl)
            if result == 1 { return .done }
            let code = SSL_get_error(ssl, result)
            switch code {
            case SSL_ERROR_WANT_READ:
                return .again
            case SSL_ERROR_WANT_WRITE:
                var pfd = pollfd(fd: SSL_get_fd(ssl), events: Int16(POLLOUT), revents: 0)
                _ = poll(&pfd, 1, 100)
            default:
                var text = [CChar](repeating: 0, count: 256)
                edgeingest_tls_error(&text, text.count)
                let reason = String(cBuffer: text)
                let verify = String(cString: edgeingest_tls_verify_error(ssl))
                return .failed(
                    [reason.isEmpty ? "the connection ended during the handshake" : reason, verify]
                        .filter { !$0.isEmpty }.joined(separator: "; ")
                )
            }
        }
        return .again
    }

    /// Ends the connection's TLS (a close_notify if it can go at once) and
    /// frees it. The event loop's, before it closes the socket.
    func closeTLS() {
        guard let ssl = tls else { return }
        if handshakeDone {
            ERR_clear_error()
            SSL_shutdown(ssl)
        }
        SSL_free(ssl)
    }

    /// Frames the next request from bytes already received (after an
    /// answer: a pipelined request may be waiting).
    mutating func next(now: Int64) -> Event {
        switch framer.next() {
        case .request(let request):
            requestStartedAt = framer.isEmpty ? nil : now  // pipelined bytes start the next one
            bodyStartedAt = nil
            bodyBytes = 0
            return .request(request)
        case .refused(let error):
            return .refused(error)
        case .continueExpected:
            startBody(now: now)
            return .continueExpected
        case .needMore(let inBody):
            if inBody { startBody(now: now) }
            return .needMore
        }
    }

    private mutating func startBody(now: Int64) {
        guard bodyStartedAt == nil else { return }
        bodyStartedAt = now
        bodyBytes = framer.buffer.count
    }

    /// What the passing of time does to this connection at `now`: nothing,
    /// close it quietly (idle too long), or answer 408 and close.
    enum Expiry: Equatable {
        case none
        case closeIdle
        case refuse(HTTPRequestError)
    }

    func expiry(now: Int64) -> Expiry {
        guard let started = requestStartedAt else {
            return now - lastActivityAt >= Int64(limits.idleTimeoutMilliseconds) ? .closeIdle : .none
        }
        if let bodyStart = bodyStartedAt {
            if now - started >= Int64(limits.requestTimeoutMilliseconds) {
                return .refuse(HTTPRequestError(status: 408, message: "the body did not arrive in time"))
            }
            let elapsed = now - bodyStart
            if elapsed >= Int64(limits.bodyRateGraceMilliseconds),
                Int64(bodyBytes) * 1000 < Int64(limits.minBodyBytesPerSecond) * elapsed
            {
                return .refuse(
                    HTTPRequestError(
                        status: 408,
                        message: "the body arrives slower than \(limits.minBodyBytesPerSecond) bytes/s"
                    )
                )
            }
            return .none
        }
        if now - started >= Int64(min(limits.headTimeoutMilliseconds, limits.requestTimeoutMilliseconds)) {
            return .refuse(HTTPRequestError(status: 408, message: "the request head did not arrive in time"))
        }
        return .none
    }

    /// The next time ``expiry(now:)`` may change (a deadline to wake for).
    func deadline() -> Int64 {
        guard let started = requestStartedAt else { return lastActivityAt + Int64(limits.idleTimeoutMilliseconds) }
        if let bodyStart = bodyStartedAt {
            // The rate is checked from the grace on, every 250 ms.
            let rateCheck = max(bodyStart + Int64(limits.bodyRateGraceMilliseconds), lastActivityAt + 250)
            return min(started + Int64(limits.requestTimeoutMilliseconds), rateCheck)
        }
        return started + Int64(min(limits.headTimeoutMilliseconds, limits.requestTimeoutMilliseconds))
    }

    /// An answer was written: the idle clock restarts.
    mutating func answered(now: Int64) {
        lastActivityAt = now
    }

    /// Writes `response` to `request`; false if the client is gone or too
    /// slow to read it within the request timeout. Blocking (a worker's).
    func write(_ response: HTTPServerResponse, to request: HTTPRequest?, keepAlive: Bool) -> Bool {
        send(
            response.serialized(for: request, keepAlive: keepAlive),
            deadline: monotonicMilliseconds() + Int64(limits.requestTimeoutMilliseconds)
        )
    }

    /// Sends `bytes` over the connection (TLS or plain) until `deadline`;
    /// false when it cannot (gone, too slow, or a TLS handshake not done).
    func send(_ bytes: [UInt8], deadline: Int64) -> Bool {
        guard let ssl = tls else { return Self.send(fd, bytes, deadline: deadline) }
        guard handshakeDone else { return false }
        var sent = 0
        while sent < bytes.count {
            ERR_clear_error()
            let n = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress! + sent, Int32($0.count - sent)) }
            if n > 0 {
                sent += Int(n)
                continue
            }
            let code = SSL_get_error(ssl, n)
            guard code == SSL_ERROR_WANT_WRITE || code == SSL_ERROR_WANT_READ else { return false }
            let left = deadline - monotonicMilliseconds()
            guard left > 0 else { return false }
            var pfd = pollfd(fd: fd, events: Int16(code == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), revents: 0)
            guard poll(&pfd, 1, Int32(clamping: left)) > 0 else { return false }
        }
        return true
    }

    /// Sends all of `bytes`, waiting for the socket as needed until `deadline`.
    static func send(_ fd: Int32, _ bytes: [UInt8], deadline: Int64) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if n >= 0 {
                sent += n
                continue
            }
            if errno == EINTR { continue }
            guard errno == EAGAIN || errno == EWOULDBLOCK else { return false }
            let left = deadline - monotonicMilliseconds()
            guard left > 0 else { return false }
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&pfd, 1, Int32(clamping: left)) > 0 else { return false }
        }
        return true
    }
}
