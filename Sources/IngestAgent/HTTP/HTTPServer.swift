import Dispatch
import EdgeIngestCore
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Answers one request. Called on the connection's own thread, so it may
/// block (a queue commit waits for its fsync).
protocol HTTPHandler: Sendable {
    func respond(to request: HTTPRequest, peer: String) -> HTTPServerResponse
}

/// A small HTTP/1.1 server: one listening socket, one thread per connection
/// (at most `maxConnections`; more are answered 503 and closed), keep-alive,
/// and the limits of ``HTTPLimits``. Bodies must carry `Content-Length`.
///
/// Why not Hummingbird: a Hummingbird "hello world" built here is several
/// times this whole agent's binary (it brings SwiftNIO and full
/// Foundation; the sizes are in docs/BENCHMARKS.md).
/// An ingest input needs one method, bounded bodies and a few routes.
final class HTTPServer: Sendable {
    let listenFD: Int32
    /// The address actually bound (the port is chosen by the system for port 0).
    let boundAddress: String
    let limits: HTTPLimits
    let maxConnections: Int
    let handler: any HTTPHandler
    let logger: Logger
    private let connections: ConnectionThreads

    /// Binds `address` ("host:port", "[v6]:port" or ":port" for every
    /// interface) and starts listening.
    init(address: String, limits: HTTPLimits, maxConnections: Int, handler: any HTTPHandler, logger: Logger) throws {
        let (host, port) = try HTTPServer.split(address)
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var info: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host.isEmpty ? nil : host, port, &hints, &info)
        guard rc == 0, let first = info else {
            throw AgentError(
                .listenFailed,
                "Cannot listen on \(address): \(String(cString: gai_strerror(rc))). Use \"host:port\", e.g. \"127.0.0.1:8480\" or \"0.0.0.0:8480\"."
            )
        }
        defer { freeaddrinfo(info) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw AgentError(.listenFailed, "Cannot listen on \(address): socket: \(String(cString: strerror(errno))).")
        }
        var one: Int32 = 1
        // A restarted agent rebinds at once, even with connections of its previous life in TIME_WAIT.
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw AgentError(
                .listenFailed,
                "Cannot listen on \(address): \(reason). Is another process using the port?"
            )
        }
        guard listen(fd, 128) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw AgentError(.listenFailed, "Cannot listen on \(address): listen: \(reason).")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        listenFD = fd
        boundAddress = HTTPServer.localAddress(fd) ?? address
        self.limits = limits
        self.maxConnections = maxConnections
        connections = ConnectionThreads(limit: maxConnections)
        self.handler = handler
        self.logger = logger
    }

    deinit { close(listenFD) }

    /// Accepts connections until `stop` fires, then waits for the
    /// connections' threads: each finishes the request it is answering
    /// (a commit under way completes and is acknowledged) and closes.
    /// `heartbeat` runs on every pass, at least every `idleMilliseconds`
    /// (a listener busy accepting is alive too).
    func serve(stop: StopSignal, idleMilliseconds: Int32, heartbeat: () -> Void) {
        while true {
            heartbeat()
            switch Readiness.wait(fd: listenFD, stop: stop, timeoutMs: idleMilliseconds) {
            case .stopped:
                connections.waitForAll()
                return
            case .timeout:
                continue
            case .readable:
                break
            }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listenFD, $0, &length) }
            }
            guard fd >= 0 else {
                // EAGAIN (another wake-up), ECONNABORTED: try again. Out of
                // descriptors: the connection stays in the backlog; pause
                // rather than spin on a listening socket that stays readable.
                if errno == EMFILE || errno == ENFILE { usleep(100_000) }
                continue
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // accept4 is not in Swift's Glibc module
            let peer = HTTPServer.describe(&storage) ?? "?"
            guard connections.start(fd, { [self] in serveConnection(fd, peer: peer, stop: stop) }) else {
                refuseBusy(fd)
                continue
            }
        }
    }

    /// Serves requests on `fd` until it closes or is refused; the caller closes it.
    private func serveConnection(_ fd: Int32, peer: String, stop: StopSignal) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var connection = HTTPConnection(fd: fd, limits: limits, stop: stop)
        while true {
            switch connection.readRequest() {
            case .closed:
                return
            case .refused(let error):
                logger.notice(
                    "Refused an HTTP request",
                    metadata: [
                        "ingest.peer": "\(peer)", "http.status": "\(error.status)", "ingest.detail": "\(error.message)",
                    ]
                )
                _ = connection.write(.error(error.status, error.code, error.message), to: nil, keepAlive: false)
                return
            case .request(let request):
                let response = handler.respond(to: request, peer: peer)
                let keepAlive = request.keepAlive && !stop.isStopped
                guard connection.write(response, to: request, keepAlive: keepAlive), keepAlive else { return }
            }
        }
    }

    /// Over the connection limit: a short 503 without reading the request.
    private func refuseBusy(_ fd: Int32) {
        let bytes = HTTPServerResponse.error(
            503,
            "busy",
            "this server has \(maxConnections) connections open; try again",
            headers: [("Retry-After", "1")]
        )
        .serialized(for: nil, keepAlive: false)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        close(fd)
    }

    static func split(_ address: String) throws -> (host: String, port: String) {
        var host = Substring(address)
        guard let colon = address.lastIndex(of: ":") else {
            throw AgentError(
                .listenFailed,
                "Cannot listen on \(quoted(address)): give host and port, e.g. \"127.0.0.1:8480\"."
            )
        }
        host = address[..<colon]
        let port = String(address[address.index(after: colon)...])
        guard let n = Int(port), (0...65535).contains(n) else {
            throw AgentError(
                .listenFailed,
                "Cannot listen on \(quoted(address)): the port must be a number from 0 to 65535."
            )
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        return (String(host), port)
    }

    private static func localAddress(_ fd: Int32) -> String? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return rc == 0 ? describe(&storage) : nil
    }

    /// "host:port" ("[v6]:port") of a socket address.
    static func describe(_ storage: inout sockaddr_storage) -> String? {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let rc = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo(
                    $0,
                    socklen_t(MemoryLayout<sockaddr_storage>.size),
                    &host,
                    socklen_t(host.count),
                    &service,
                    socklen_t(service.count),
                    NI_NUMERICHOST | NI_NUMERICSERV
                )
            }
        }
        guard rc == 0 else { return nil }
        let h = String(cString: host)
        let s = String(cString: service)
        return h.contains(":") ? "[\(h)]:\(s)" : "\(h):\(s)"
    }
}
