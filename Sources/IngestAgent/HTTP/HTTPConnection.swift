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
    /// From a request's first byte to its last: a client trickling its
    /// head or body (slowloris) is cut off here.
    public var requestTimeoutMilliseconds = 30_000
    /// How long an idle keep-alive connection stays open.
    public var idleTimeoutMilliseconds = 60_000

    public init() {}
}

/// One accepted connection, read and written by the thread that serves it.
/// Blocking I/O with `poll`, so every wait also watches the stop signal.
struct HTTPConnection {
    let fd: Int32
    let limits: HTTPLimits
    let stop: StopSignal
    /// Cuts the requests out of what arrives.
    private var framer: HTTPRequestFramer
    /// Where `recv` writes, reused for every read of the connection.
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)

    init(fd: Int32, limits: HTTPLimits, stop: StopSignal) {
        self.fd = fd
        self.limits = limits
        self.stop = stop
        framer = HTTPRequestFramer(maxHeadBytes: limits.maxHeadBytes, maxBodyBytes: limits.maxBodyBytes)
    }

    enum ReadOutcome {
        case request(HTTPRequest)
        /// The client closed, went idle too long, or the server is stopping:
        /// close without an answer.
        case closed
        /// Answer this and close.
        case refused(HTTPRequestError)
    }

    /// Reads the next request, answering `100 Continue` when the client
    /// waits for it and the announced body is acceptable.
    mutating func readRequest() -> ReadOutcome {
        // Idle wait for the first byte of the next request.
        if framer.isEmpty {
            switch wait(milliseconds: limits.idleTimeoutMilliseconds) {
            case .readable: break
            case .stopped, .timeout: return .closed
            }
        }
        let deadline = monotonicMilliseconds() + Int64(limits.requestTimeoutMilliseconds)
        while true {
            switch framer.next() {
            case .request(let request): return .request(request)
            case .refused(let error): return .refused(error)
            case .continueExpected:
                guard send(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8), deadline: deadline) else { return .closed }
            case .needMore(let inBody):
                switch fill(deadline: deadline) {
                case .ok: continue
                case .eof, .stopped: return .closed
                case .timeout:
                    if inBody {
                        return .refused(HTTPRequestError(status: 408, message: "the body did not arrive in time"))
                    }
                    return framer.isEmpty
                        ? .closed
                        : .refused(HTTPRequestError(status: 408, message: "the request head did not arrive in time"))
                }
            }
        }
    }

    /// Writes `response` to `request`; false if the client is gone or too slow to read it.
    func write(_ response: HTTPServerResponse, to request: HTTPRequest?, keepAlive: Bool) -> Bool {
        send(
            response.serialized(for: request, keepAlive: keepAlive),
            deadline: monotonicMilliseconds() + Int64(limits.requestTimeoutMilliseconds)
        )
    }

    private enum Fill { case ok, eof, timeout, stopped }

    private mutating func fill(deadline: Int64) -> Fill {
        let left = deadline - monotonicMilliseconds()
        guard left > 0 else { return .timeout }
        switch wait(milliseconds: Int(left)) {
        case .stopped: return .stopped
        case .timeout: return .timeout
        case .readable: break
        }
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 { return errno == EINTR || errno == EAGAIN ? .ok : .eof }
        if n == 0 { return .eof }
        framer.append(chunk[0..<n])
        return .ok
    }

    private func wait(milliseconds: Int) -> Readiness {
        Readiness.wait(fd: fd, stop: stop, timeoutMs: Int32(clamping: milliseconds))
    }

    private func send(_ bytes: [UInt8], deadline: Int64) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let left = deadline - monotonicMilliseconds()
            guard left > 0 else { return false }
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            guard poll(&pfd, 1, Int32(clamping: left)) > 0 else { return false }
            let n = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return false
            }
            sent += n
        }
        return true
    }
}
