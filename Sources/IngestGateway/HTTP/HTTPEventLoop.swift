import CEpoll
import EdgeIngestCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The HTTP server's one event loop (issue 23): a thread on `epoll` that
/// accepts, reads every connection without blocking, cuts requests out of
/// the bytes (``HTTPConnection``), enforces the deadlines, and hands each
/// whole request to ``HTTPWorkers``, which run the handler and write the
/// answer, then give the connection back. So an idle keep-alive
/// connection, or one whose client trickles its head, costs a descriptor
/// and a few KiB — not a thread — and admission (``HTTPAdmission``) keeps
/// clients that never proved themselves from crowding out those that did.
///
/// Used by ``HTTPServer/serve(stop:idleMilliseconds:heartbeat:)``; state is
/// the loop thread's own, except the list of connections the workers give back.
final class HTTPEventLoop {
    let listenFD: Int32
    let limits: HTTPLimits
    let handler: any HTTPHandler
    let logger: Logger
    /// TLS for every connection, when the input has a certificate.
    let tls: ServerTLS?
    private let epollFD: Int32
    private var admission: HTTPAdmission
    private var connections: [Int32: HTTPConnection] = [:]
    private let workers: HTTPWorkers
    /// Connections the workers answered, given back to the loop.
    private let handoff = Handoff()
    private var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    private var logWindows = LogWindows()
    /// The next sweep for deadlines (monotonic ms).
    private var nextSweep: Int64 = 0
    /// Passes of the loop (from 1): a connection accepted in this one
    /// cannot be evicted in it (``HTTPAdmission``).
    private var round: UInt64 = 0
    /// The server's stop signal (from ``run(stop:idleMilliseconds:heartbeat:)``):
    /// once it fired, answers say `Connection: close`.
    private var stop: StopSignal?

    /// Sweeps for deadlines at most this often: timeouts fire up to this late.
    static let sweepMilliseconds: Int64 = 100

    init(
        listenFD: Int32,
        limits: HTTPLimits,
        maxConnections: Int,
        maxConnectionsPerAddress: Int,
        workerThreads: Int,
        tls: ServerTLS?,
        handler: any HTTPHandler,
        logger: Logger
    ) {
        self.listenFD = listenFD
        self.tls = tls
        self.limits = limits
        self.handler = handler
        self.logger = logger
        admission = HTTPAdmission(maxConnections: maxConnections, maxPerAddress: maxConnectionsPerAddress)
        workers = HTTPWorkers(count: workerThreads)
        epollFD = epoll_create1(Int32(EPOLL_CLOEXEC))
    }

    deinit { close(epollFD) }

    /// Serves until `stop` fires, then stops accepting, closes the
    /// connections that wait, lets the requests under way finish (a batch
    /// being committed is committed and acknowledged) and closes the rest.
    func run(stop: StopSignal, idleMilliseconds: Int32, heartbeat: () -> Void) {
        self.stop = stop
        watch(listenFD)
        watch(stop.readFD)
        watch(handoff.signal.readFD)
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        var stopping = false
        while true {
            heartbeat()
            round += 1
            let now = monotonicMilliseconds()
            if now >= nextSweep { sweep(now: now) }
            if stopping {
                closeWaitingConnections()
                if connections.isEmpty { break }
            }
            let timeout = Int32(clamping: max(1, min(Int64(idleMilliseconds), nextSweep - now)))
            let n = events.withUnsafeMutableBufferPointer {
                epoll_wait(epollFD, $0.baseAddress!, Int32($0.count), timeout)  // never empty
            }
            guard n > 0 else { continue }  // timeout or EINTR
            var accepting = false
            for event in events[0..<Int(n)] {
                let fd = event.data.fd
                if fd == listenFD {
                    accepting = !stopping
                } else if fd == stop.readFD {
                    if !stopping {
                        stopping = true
                        unwatch(listenFD)
                        unwatch(stop.readFD)
                    }
                } else if fd == handoff.signal.readFD {
                    handoff.signal.drain()
                    takeReturned(stopping: stopping)
                } else {
                    readable(fd)
                }
            }
            // Accept last: a client that connected and sent its request is
            // read (and answered) before newcomers could make it give way.
            if accepting, !stopping { acceptAll() }
        }
        workers.finish()
    }

    // MARK: Accepting

    private func acceptAll() {
        while true {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listenFD, $0, &length) }
            }
            guard fd >= 0 else {
                if errno == EINTR || errno == ECONNABORTED { continue }
                // EAGAIN: all taken. Out of descriptors: the connection stays in
                // the backlog; the listener stays readable, so pause briefly.
                if errno == EMFILE || errno == ENFILE {
                    logOnce("descriptors", "Out of file descriptors: new connections wait in the backlog")
                    usleep(10_000)
                }
                return
            }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // accept4 is not in Swift's Glibc module
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            let peer = HTTPServer.describe(&storage) ?? "?"
            let address = Self.host(of: peer)
            switch decide(address: address) {
            case .admit:
                break
            case .admitAfterEvicting(let victim):
                logOnce(
                    "evicted",
                    "Closed a connection that had not sent valid credentials, to make room for a new one (the server is at max_connections)",
                    ["ingest.peer": "\(connections[victim]?.peer ?? "?")"]
                )
                closeConnection(victim)
            case .admitAfterEvictingFromAddress(let victim):
                logOnce(
                    "evicted-address",
                    "Closed a connection that had not sent valid credentials, to make room for a new one from its address (at max_connections_per_address)",
                    ["ingest.peer": "\(connections[victim]?.peer ?? "?")"]
                )
                closeConnection(victim)
            case .refuseAddress:
                logOnce(
                    "per-address",
                    "Refused a connection: its address has max_connections_per_address open, each with valid credentials or a request under way",
                    ["ingest.peer": "\(peer)"]
                )
                refuse(fd, "this address has \(admission.maxPerAddress) connections open; try again")
                continue
            case .refuseFull:
                logOnce(
                    "full",
                    "Refused a connection: every slot is taken by clients with valid credentials or requests under way",
                    ["ingest.peer": "\(peer)"]
                )
                refuse(fd, "this server has \(admission.maxConnections) connections open; try again")
                continue
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let now = monotonicMilliseconds()
            var ssl: OpaquePointer?
            if let tls {
                ssl = tls.connection(fd, now: now)
                guard ssl != nil else {
                    close(fd)
                    continue
                }
            }
            admission.admitted(fd, address: address, now: now, round: round)
            let connection = HTTPConnection(fd: fd, peer: peer, limits: limits, now: now, tls: ssl)
            connections[fd] = connection
            schedule(connection.deadline())
            watch(fd)
        }
    }

    /// ``HTTPAdmission``'s decision, but a connection about to be evicted is
    /// read first: if its request has arrived since the last pass, it is
    /// answered (busy, so not evicted) and another is chosen.
    private func decide(address: String) -> HTTPAdmission.Decision {
        for _ in 0..<8 {
            let decision = admission.decide(address: address, round: round, now: monotonicMilliseconds())
            guard case .admitAfterEvicting(let victim) = decision else { return decision }
            readable(victim)
            guard let slot = admission.slots[victim], !slot.busy else { continue }  // answered, or closed
            return decision
        }
        return admission.decide(address: address, round: round, now: monotonicMilliseconds())
    }

    /// A short 503 without reading the request, then close (a TLS client
    /// would not understand a plain answer: it is only closed).
    private func refuse(_ fd: Int32, _ message: String) {
        guard tls == nil else {
            close(fd)
            return
        }
        let bytes = HTTPServerResponse.error(503, "busy", message, headers: [("Retry-After", "1")])
            .serialized(for: nil, keepAlive: false)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        Self.closeAfterAnswer(fd)
    }

    /// Closes a socket the client may still be writing to. A socket closed
    /// with unread bytes sends a reset, which can destroy the answer still
    /// unread on the client's side (curl: "Connection reset by peer" instead
    /// of the 503): so the sending side is shut first and what has arrived
    /// is read away (without waiting: at most 256 KiB).
    static func closeAfterAnswer(_ fd: Int32) {
        shutdown(fd, Int32(SHUT_WR))
        var sink = [UInt8](repeating: 0, count: 16 * 1024)
        for _ in 0..<16
        where sink.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
        close(fd)
    }

    // MARK: Reading

    private func readable(_ fd: Int32) {
        guard var connection = connections[fd] else { return }
        let now = monotonicMilliseconds()
        let event = connection.readable(now: now, into: &chunk)
        connections[fd] = connection
        admission.update(fd) { $0.lastActivityAt = connection.lastActivityAt }
        schedule(connection.deadline())
        handle(event, fd: fd)
    }

    private func handle(_ event: HTTPConnection.Event, fd: Int32) {
        switch event {
        case .needMore:
            break
        case .continueExpected:
            // Small: fits the socket's buffer; a client that gets no 100 sends its body anyway.
            _ = connections[fd]?.send(
                Array("HTTP/1.1 100 Continue\r\n\r\n".utf8),
                deadline: monotonicMilliseconds() + 100
            )
        case .closed:
            if let connection = connections[fd], let failure = connection.handshakeFailure {
                logOnce(
                    "tls-handshake",
                    "A TLS handshake failed",
                    ["ingest.peer": "\(connection.peer)", "tls.reason": "\(failure)"]
                )
            }
            closeConnection(fd)
        case .refused(let error):
            refuseRequest(fd, error)
        case .request(let request):
            dispatch(fd, request)
        }
    }

    /// Hands a whole request to a worker; the loop stops watching the
    /// connection until the answer is written.
    private func dispatch(_ fd: Int32, _ request: HTTPRequest) {
        guard let connection = connections[fd] else { return }
        var request = request
        request.clientCertificateName = connection.clientCertificateName
        unwatch(fd)
        admission.update(fd) { $0.busy = true }
        let handler = handler
        let handoff = handoff
        let stop = stop
        workers.submit {
            let response = handler.respond(to: request, peer: connection.peer)
            let keepAlive = request.keepAlive && stop?.isStopped != true
            let written = connection.write(response, to: request, keepAlive: keepAlive)
            handoff.give(fd, keepAlive: keepAlive && written, trusted: response.trustsClient)
        }
    }

    /// Answers a refused request (400, 408, 413, 431 …) and closes; the
    /// write may block on a client that does not read, so a worker does it.
    private func refuseRequest(_ fd: Int32, _ error: HTTPRequestError) {
        guard let connection = connections[fd] else { return }
        logOnce(
            "refused-\(error.status)",
            "Refused an HTTP request",
            [
                "ingest.peer": "\(connection.peer)", "http.status": "\(error.status)",
                "ingest.detail": "\(error.message)",
            ]
        )
        unwatch(fd)
        admission.update(fd) { $0.busy = true }
        let handoff = handoff
        workers.submit {
            _ = connection.write(.error(error.status, error.code, error.message), to: nil, keepAlive: false)
            handoff.give(fd, keepAlive: false, trusted: false)
        }
    }

    /// Connections the workers answered: closed, or watched again — and a
    /// request that was pipelined behind the answered one handled at once.
    private func takeReturned(stopping: Bool) {
        let answered = handoff.take()
        let now = monotonicMilliseconds()
        for (fd, keepAlive, trusted) in answered {
            guard keepAlive, !stopping, var connection = connections[fd] else {
                closeConnection(fd)
                continue
            }
            connection.answered(now: now)
            let event = connection.next(now: now)
            connections[fd] = connection
            schedule(connection.deadline())
            admission.update(fd) {
                $0.busy = false
                $0.trusted = $0.trusted || trusted
                $0.lastActivityAt = now
            }
            watch(fd)
            handle(event, fd: fd)
        }
    }

    // MARK: Deadlines and closing

    /// Closes idle connections past the idle timeout and answers 408 to
    /// requests past theirs; sets the next sweep.
    private func sweep(now: Int64) {
        var earliest = Int64.max
        for (fd, slot) in admission.slots where !slot.busy {
            guard let connection = connections[fd] else { continue }
            switch connection.expiry(now: now) {
            case .none:
                earliest = min(earliest, connection.deadline())
            case .closeIdle:
                closeConnection(fd)
            case .refuse(let error):
                refuseRequest(fd, error)
            }
        }
        // No connection waiting for a deadline: no sweep until one comes (an
        // idle server wakes only for its heartbeat, as before the loop).
        nextSweep = earliest == .max ? .max : max(now + Self.sweepMilliseconds, earliest)
        flushLogWindows(now: now)
    }

    /// Makes the next sweep come by `deadline` (not sooner than a sweep
    /// interval from now).
    private func schedule(_ deadline: Int64) {
        nextSweep = min(nextSweep, max(monotonicMilliseconds() + Self.sweepMilliseconds, deadline))
    }

    /// On stop: every connection not being answered is closed.
    private func closeWaitingConnections() {
        for (fd, slot) in admission.slots where !slot.busy { closeConnection(fd) }
    }

    private func closeConnection(_ fd: Int32) {
        guard let connection = connections.removeValue(forKey: fd) else { return }
        connection.closeTLS()
        admission.closed(fd)
        unwatch(fd)
        Self.closeAfterAnswer(fd)
    }

    private func watch(_ fd: Int32) {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLRDHUP.rawValue
        event.data.fd = fd
        _ = epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event)
    }

    private func unwatch(_ fd: Int32) {
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, nil)
    }

    // MARK: Logging

    /// Logs a notice for `key` at most ``LogWindows/burst`` times a minute;
    /// the rest are counted and summarized when the minute ends.
    private func logOnce(_ key: String, _ message: String, _ metadata: Logger.Metadata = [:]) {
        let now = monotonicSeconds()
        let (log, ended) = logWindows.admit(key, now: now)
        if let ended, ended.suppressed > 0 { summarize(key, ended) }
        if log { logger.notice("\(message)", metadata: metadata) }
    }

    private func flushLogWindows(now: Int64) {
        guard !logWindows.isEmpty else { return }
        for (key, window) in logWindows.takeExpired(now: Double(now) / 1000) where window.suppressed > 0 {
            summarize(key, window)
        }
    }

    private func summarize(_ key: String, _ window: LogWindows.Window) {
        logger.notice(
            "More connections or requests were refused or closed than were logged",
            metadata: ["ingest.kind": "\(key)", "ingest.not_logged": "\(window.suppressed)"]
        )
    }

    /// The host part of "host:port" or "[v6]:port": what per-address limits count.
    static func host(of peer: String) -> String {
        guard let colon = peer.lastIndex(of: ":") else { return peer }
        return String(peer[..<colon])
    }
}

/// Connections the workers answered, on their way back to the loop: the
/// list, and a self-pipe that wakes the loop when something is added.
private final class Handoff: Sendable {
    let signal = WakeSignal()
    private let list = PlainMutex<[(fd: Int32, keepAlive: Bool, trusted: Bool)]>([])

    /// `keepAlive`: keep the connection open; `trusted`: the answer trusted the client.
    func give(_ fd: Int32, keepAlive: Bool, trusted: Bool) {
        list.withLock { $0.append((fd, keepAlive, trusted)) }
        signal.wake()
    }

    func take() -> [(fd: Int32, keepAlive: Bool, trusted: Bool)] {
        list.withLock { list in
            defer { list.removeAll(keepingCapacity: true) }
            return list
        }
    }
}
