import EdgeIngestCore
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// A Unix socket sensor scripts stream readings to with `ingestd send`
/// (docs/PROTOCOL.md, "The local socket"): the service's answer to "pipe
/// a script into the agent", and durable end to end, as the agent tells
/// the sender which lines are committed.
///
/// A connection sends one header line, `EDGEINGEST-SEND 1`, optionally
/// followed by ` type=NAME` and ` format=ndjson|csv`, then its lines, and
/// shuts down its writing side at the end. The agent answers, one line
/// each: `REJECTED <line> <reason> <message>` as lines are refused,
/// `COMMITTED <n>` once the first n lines are committed (or refused and
/// counted), and `DONE <lines> <accepted> <rejected>` after the last, then
/// closes. `ERROR <message>` answers a bad header.
///
/// The socket is the one systemd passes (socket activation, `LISTEN_FDS`,
/// `ingestd.socket`) or one the agent binds at `socket` (mode 0600, or 0660
/// with `socket_group`).
struct SocketInput: Service {
    let context: InputContext
    let path: String
    let listenFD: Int32
    /// Whether the agent bound (and so removes) the socket file.
    let ownsFile: Bool
    /// The run's reload: its hand-over keeps senders connected across it.
    let reload: Reload?
    static let maxConnections = 16

    init(context: InputContext, path: String, reload: Reload? = nil) throws {
        self.context = context
        self.path = path
        self.reload = reload
        let environment = ["LISTEN_PID", "LISTEN_FDS"].reduce(into: [String: String]()) { out, name in
            out[name] = getenv(name).map { String(cString: $0) }
        }
        if let passed = Self.activatedSocket(environment) {
            listenFD = passed
            ownsFile = false
        } else {
            listenFD = try Self.bind(path: path, group: context.settings.socketGroup)
            ownsFile = true
        }
        // The path senders reach: the one systemd bound, when it passed the socket.
        let listening = ownsFile ? path : UnixSocket.boundPath(listenFD) ?? path
        context.logger.info(
            "Listening for ingestd send",
            metadata: [
                "ingest.input": "\(context.settings.name)", "ingest.socket": "\(listening)",
                "ingest.socket_from": "\(ownsFile ? "configuration" : "systemd")",
            ]
        )
    }

    func run() async throws {
        defer {
            context.counters.update { $0.finished = true }
            // A socket systemd passed stays open: after a reload the agent
            // takes it again (LISTEN_FDS still names it), and senders wait
            // in its backlog meanwhile.
            if ownsFile {
                close(listenFD)
                unlink(path)
            }
        }
        try await runBlockingLoop { [self] stop in acceptLoop(stop: stop) }
    }

    private func acceptLoop(stop: StopSignal) {
        let connections = ConnectionThreads(limit: Self.maxConnections)
        let sessions = ActiveSocketSessions()
        forgetOldSessions()
        // Senders the last run kept connected through its reload.
        for parked in reload?.handover.take(input: context.settings.name) ?? [] {
            let started = connections.start(parked.fd) { [self] in
                SocketConnection(fd: parked.fd, context: context, stop: stop, sessions: sessions, reload: reload)
                    .serve(resuming: parked)
            }
            if !started {
                Self.write(parked.fd, "RETRY too many senders at once (\(Self.maxConnections)): try again\n")
                close(parked.fd)
            }
        }
        while true {
            switch Readiness.wait(fd: listenFD, stop: stop, timeoutMs: context.waitMilliseconds(pending: false)) {
            case .stopped:
                connections.waitForAll()  // senders' lines are committed and answered first
                return
            case .timeout:
                context.counters.heartbeat()
                continue
            case .readable:
                break
            }
            let fd = accept(listenFD, nil, nil)
            guard fd >= 0 else { continue }
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            guard
                connections.start(
                    fd,
                    { [self] in
                        SocketConnection(fd: fd, context: context, stop: stop, sessions: sessions, reload: reload)
                            .serve()
                    }
                )
            else {
                Self.write(fd, "RETRY too many senders at once (\(Self.maxConnections)): try again\n")
                close(fd)
                continue
            }
        }
    }

    /// Forgets the positions of send sessions nobody resumed for a week.
    private func forgetOldSessions() {
        let before = wallClockMilliseconds() - SocketSession.forgetAfterMilliseconds
        do {
            let forgotten = try context.queue.forgetPositions(prefix: SocketSession.sourcePrefix, updatedBefore: before)
            if forgotten > 0 {
                context.logger.info(
                    "Forgot the positions of send sessions idle for over a week",
                    metadata: ["ingest.input": "\(context.settings.name)", "ingest.sessions": "\(forgotten)"]
                )
            }
        } catch {
            context.logger.warning(
                "Could not forget old send sessions' positions",
                metadata: ["ingest.input": "\(context.settings.name)", "error": "\(error)"]
            )
        }
    }

    /// The first socket systemd passed (`LISTEN_PID` is this process), if any.
    static func activatedSocket(_ environment: [String: String]) -> Int32? {
        guard let pid = environment["LISTEN_PID"].flatMap({ Int32($0) }), pid == getpid(),
            let count = environment["LISTEN_FDS"].flatMap({ Int($0) }), count >= 1
        else { return nil }
        return 3  // SD_LISTEN_FDS_START
    }

    /// Binds and listens at `path` (an old socket file there is replaced).
    ///
    /// The socket is bound at a side name (`path` + `~`), listening and
    /// given its mode and group there, and only then renamed to `path`:
    /// whoever finds the socket file can connect at once (a sender never
    /// meets a bound socket that is not listening yet, "Connection
    /// refused") and never meets it with the umask's permissions. A path
    /// too long for the side name is bound in place.
    static func bind(path: String, group: String?) throws -> Int32 {
        guard UnixSocket.address(path) != nil else {
            throw AgentError(
                .listenFailed,
                "The socket path '\(path)' is longer than \(UnixSocket.maxPathBytes) bytes: choose a shorter one."
            )
        }
        try QueueFile.makeDirectories(QueueFile.parentDirectory(of: path))
        let side = path + "~"
        let bindPath = UnixSocket.address(side) != nil ? side : path
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else {
            throw AgentError(.listenFailed, "Cannot make a socket: \(String(cString: strerror(errno))).")
        }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        /// After a successful bind: the file at `bindPath` is this socket's.
        func fail(_ message: String) -> AgentError {
            close(fd)
            unlink(bindPath)
            return AgentError(.listenFailed, message)
        }
        for old in Set([bindPath, path]) {
            var info = stat()
            if lstat(old, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK { unlink(old) }
        }
        var address = UnixSocket.address(bindPath)!
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw AgentError(.listenFailed, "Cannot listen on the socket '\(path)': \(reason).")
        }
        if let group {
            guard let entry = getgrnam(group) else {
                throw fail("The socket_group '\(group)' does not exist: create it (addgroup --system \(group)).")
            }
            guard chown(bindPath, uid_t.max, entry.pointee.gr_gid) == 0, chmod(bindPath, 0o660) == 0 else {
                throw fail("Cannot give the socket '\(path)' to group '\(group)': \(String(cString: strerror(errno))).")
            }
        } else {
            _ = chmod(bindPath, 0o600)
        }
        if bindPath != path, rename(bindPath, path) != 0 {
            throw fail("Cannot put the socket in place at '\(path)': \(String(cString: strerror(errno))).")
        }
        return fd
    }

    /// Writes all of `text` (a short answer); a sender that went away is not an error.
    static func write(_ fd: Int32, _ text: String) { UnixSocket.sendAll(fd, Array(text.utf8)) }
}
