import Dispatch
import EdgeIngestCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// Answers one request. Called on a worker thread (``HTTPWorkers``), so
/// it may block (a queue commit waits for its fsync).
package protocol HTTPHandler: Sendable {
    func respond(to request: HTTPRequest, peer: String) -> HTTPServerResponse
}

/// A small HTTP/1.1 server: one listening socket, one event loop on epoll
/// that reads every connection (``HTTPEventLoop``), a few worker threads
/// that answer whole requests (``HTTPWorkers``), keep-alive, the limits of
/// ``HTTPLimits`` and the admission rules of ``HTTPAdmission``. Bodies
/// must carry `Content-Length`.
///
/// Why our own loop, not SwiftNIO or Hummingbird: measured in
/// docs/BENCHMARKS.md ("The gateway's connections") and said in
/// docs/PROTOCOL.md ("Connections").
package final class HTTPServer: Sendable {
    let listenFD: Int32
    /// The address actually bound (the port is chosen by the system for port 0).
    package let boundAddress: String
    let limits: HTTPLimits
    let maxConnections: Int
    let maxConnectionsPerAddress: Int
    let workerThreads: Int
    let handler: any HTTPHandler
    let logger: Logger
    /// TLS, when the input has a certificate: loaded here, so a bad file fails the start.
    let tls: ServerTLS?

    /// Binds `address` ("host:port", "[v6]:port" or ":port" for every
    /// interface) and starts listening. `workerThreads` bound the requests
    /// answered at once (default: `min(maxConnections, 8)`).
    package init(
        address: String,
        limits: HTTPLimits,
        maxConnections: Int,
        maxConnectionsPerAddress: Int? = nil,
        workerThreads: Int? = nil,
        tls: ServerTLS.Files? = nil,
        handler: any HTTPHandler,
        logger: Logger
    ) throws {
        self.tls = try tls.map { try ServerTLS(files: $0, logger: logger) }
        let (host, port) = try HTTPServer.split(address)
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var info: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host.isEmpty ? nil : host, port, &hints, &info)
        guard rc == 0, let first = info else {
            throw GatewayError(
                .listenFailed,
                "Cannot listen on \(address): \(String(cString: gai_strerror(rc))). Use \"host:port\", e.g. \"127.0.0.1:8480\" or \"0.0.0.0:8480\"."
            )
        }
        defer { freeaddrinfo(info) }
        let fd = socket(first.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            throw GatewayError(
                .listenFailed,
                "Cannot listen on \(address): socket: \(String(cString: strerror(errno)))."
            )
        }
        var one: Int32 = 1
        // A restarted agent rebinds at once, even with connections of its previous life in TIME_WAIT.
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw GatewayError(
                .listenFailed,
                "Cannot listen on \(address): \(reason). Is another process using the port?"
            )
        }
        guard listen(fd, 1024) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw GatewayError(.listenFailed, "Cannot listen on \(address): listen: \(reason).")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        listenFD = fd
        boundAddress = HTTPServer.localAddress(fd) ?? address
        self.limits = limits
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress ?? maxConnections
        self.workerThreads = workerThreads ?? min(maxConnections, 8)
        self.handler = handler
        self.logger = logger
    }

    /// Whether the listening socket was closed (after ``serve(stop:idleMilliseconds:heartbeat:)``).
    private let listenerClosed = PlainMutex(false)

    deinit { closeListener() }

    /// Closes the listening socket once. A stopped server closes it before
    /// `serve` returns, not when the object happens to be freed: after a
    /// reload the next run binds the same port at once ("Address already in
    /// use" killed the agent on a reload with `[metrics]`; the real-systemd
    /// test caught it).
    private func closeListener() {
        let close = listenerClosed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        if close { Glibc.close(listenFD) }
    }

    /// Serves until `stop` fires, then stops accepting, closes the
    /// connections that wait, and lets each request under way finish (a
    /// commit under way completes and is acknowledged). `heartbeat` runs on
    /// every pass of the loop, at least every `idleMilliseconds`.
    package func serve(stop: StopSignal, idleMilliseconds: Int32, heartbeat: () -> Void) {
        let loop = HTTPEventLoop(
            listenFD: listenFD,
            limits: limits,
            maxConnections: maxConnections,
            maxConnectionsPerAddress: maxConnectionsPerAddress,
            workerThreads: workerThreads,
            tls: tls,
            handler: handler,
            logger: logger
        )
        loop.run(stop: stop, idleMilliseconds: idleMilliseconds, heartbeat: heartbeat)
        closeListener()
    }

    package static func split(_ address: String) throws -> (host: String, port: String) {
        var host = Substring(address)
        guard let colon = address.lastIndex(of: ":") else {
            throw GatewayError(
                .listenFailed,
                "Cannot listen on \(quoted(address)): give host and port, e.g. \"127.0.0.1:8480\"."
            )
        }
        host = address[..<colon]
        let port = String(address[address.index(after: colon)...])
        guard let n = Int(port), (0...65535).contains(n) else {
            throw GatewayError(
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
