import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// Limits that keep one slow or hostile client from holding the server.
public struct HTTPLimits: Sendable, Hashable {
    /// Request line and headers together.
    public var maxHeadBytes = 16 * 1024
    /// A body announced larger is answered 413 without being read.
    public var maxBodyBytes = 2 << 20
    /// From a request's first byte to the end of its head: a client
    /// trickling its head (slowloris) is answered 408 and closed here.
    public var headTimeoutMilliseconds = 10_000
    /// From a request's first byte to its last.
    public var requestTimeoutMilliseconds = 30_000
    /// The slowest a body may arrive, on average since its head ended,
    /// once ``bodyRateGraceMilliseconds`` have passed: a client trickling
    /// a large body is cut off long before the request timeout.
    public var minBodyBytesPerSecond = 1024
    /// How long a body may arrive slower than ``minBodyBytesPerSecond``
    /// (a connection's slow start).
    public var bodyRateGraceMilliseconds = 2_000
    /// How long an idle keep-alive connection stays open.
    public var idleTimeoutMilliseconds = 60_000

    public init() {}
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
struct HTTPConnection {
    let fd: Int32
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

    init(fd: Int32, limits: HTTPLimits, now: Int64) {
        self.fd = fd
        self.limits = limits
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

    /// Whether no request is under way (between requests: only the idle timeout applies).
    var isIdle: Bool { framer.isEmpty }

    /// Reads what the socket holds (without blocking; at most
    /// `maxReadBytes`, so one fast client cannot hold the loop), then
    /// frames the next request.
    mutating func readable(now: Int64, into chunk: inout [UInt8], maxReadBytes: Int = 256 * 1024) -> Event {
        var read = 0
        while read < maxReadBytes {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                return .closed
            }
            if n == 0 {
                // End of file: a request cut short is not answered, as before.
                return .closed
            }
            if requestStartedAt == nil { requestStartedAt = now }
            if bodyStartedAt != nil { bodyBytes += n }
            lastActivityAt = now
            framer.append(chunk[0..<n])
            read += n
            if n < chunk.count { break }  // drained
        }
        return next(now: now)
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
        Self.send(
            fd,
            response.serialized(for: request, keepAlive: keepAlive),
            deadline: monotonicMilliseconds() + Int64(limits.requestTimeoutMilliseconds)
        )
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
