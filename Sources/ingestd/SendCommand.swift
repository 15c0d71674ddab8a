import EdgeIngestCore
import IngestAgent

#if canImport(Glibc)
import Glibc
#endif

/// `sensor.py | ingestd send`: streams standard input to the running agent's
/// socket input and exits 0 only once the agent has confirmed every line
/// committed (the protocol is in ``SocketInput``).
struct SendCommand: IngestdCommand {
    static let spec = CommandSpec(
        name: "send",
        abstract: "Send readings from standard input to the running agent; exits 0 once all are committed.",
        discussion: """
            Streams standard input (NDJSON or CSV lines) to the agent's socket input \\
            (kind = "socket" in its configuration; under systemd, ingestd.socket). \\
            The agent confirms what it has committed as it goes; refused lines are \\
            reported on stderr with their line numbers. Unlike a plain pipe, this \\
            is durable end to end: when send exits 0, every line is in the queue.

            A sensor pipe outlives the agent: when the agent reloads, restarts or \\
            crashes, send reconnects (for up to --wait; standard input is not read \\
            meanwhile) and sends again exactly what was not committed, so every line \\
            is stored once, with or without _id. An agent that takes no reading and \\
            answers nothing for --timeout (frozen, stopped with SIGSTOP) ends send.

            The socket: --socket, else the configuration's socket input, else \\
            /run/ingestd/ingestd.sock (the package's).

            Exit codes: 0 every line committed; 65 some lines were refused (the rest \\
            are committed); 69 the agent did not answer for --timeout; 74 the agent \\
            cannot be reached at the start; 75 the agent refused the stream, or did \\
            not come back within --wait (stderr says after which line to send again).

            Example:
              sensor.py | ingestd send --type WeatherSensor
            """,
        options: ConfigurationOptions.specs + [
            socketOption.spec, typeOption.spec, formatOption.spec, waitOption.spec, timeoutOption.spec,
        ],
        command: SendCommand.self
    )
    static let socketOption = Option<String>("socket", "path", help: "The agent's socket.")
    static let typeOption = Option<String>(
        "type",
        "type",
        help: "The record type of readings that carry no _type (default: the input's)."
    )
    static let formatOption = Option.format(help: "ndjson or csv (default: the input's).")
    static let waitOption = Option.duration(
        "wait",
        help: "How long to wait for an agent that went away (reload, restart, crash) to come back.",
        default: "10m"
    )
    static let timeoutOption = Option.duration(
        "timeout",
        help: "How long a connected agent may leave sent lines unconfirmed before send gives up.",
        default: "60s"
    )
    static let packagedSocket = "/run/ingestd/ingestd.sock"
    /// A reconnection this quick is not worth a line on stderr (a reload).
    static let quietReconnectMilliseconds: Int64 = 3_000
    /// Unconfirmed bytes kept at most; standard input is read no further meanwhile.
    static let maxKeptBytes = 4 << 20

    let options: ConfigurationOptions
    let socketPath: String?
    let type: String?
    let format: InputSettings.Format?
    let waitMilliseconds: Int64
    let timeoutMilliseconds: Int64

    init(_ arguments: ParsedArguments) throws(UsageError) {
        options = ConfigurationOptions(arguments)
        socketPath = arguments[Self.socketOption]
        type = arguments[Self.typeOption]
        format = try arguments.value(Self.formatOption)
        waitMilliseconds = try arguments.value(Self.waitOption) ?? 600_000
        timeoutMilliseconds = max(1_000, try arguments.value(Self.timeoutOption) ?? 60_000)
        if let type, type.contains(where: { $0 == " " || $0 == "\n" }) {
            throw UsageError("--type must be a record type's name, got '\(type)'.", option: Self.typeOption.spec)
        }
    }

    func run() throws {
        let path = resolvedSocket()
        var stream = SendStream(session: Self.newSessionID())
        var fd = try connect(path, quiet: false)
        while true {
            let ended = serve(fd, &stream)
            close(fd)
            switch ended {
            case .done:
                let done = stream.done!
                if done.refused > 0 {
                    printError(
                        "ingestd send: \(done.refused) of \(done.lines) lines refused (above); the others are committed."
                    )
                    throw ExitCodes.dataError
                }
                return
            case .failed(let reason):
                printError("ingestd send: the agent says: \(reason)")
                printError(unconfirmedAdvice(stream, "the agent refused the stream"))
                throw ExitCodes.tempFail
            case .timedOut:
                printError(
                    "ingestd send: the agent at '\(path)' has confirmed nothing for \(timeoutMilliseconds / 1000) s (frozen? stopped with SIGSTOP? see `ingestd status`)."
                )
                printError(unconfirmedAdvice(stream, "gave up"))
                throw ExitCodes.unavailable
            case .retry(let reason):
                fd = try reconnect(path, stream: stream, because: reason)
            }
        }
    }

    /// How one connection ended.
    enum ConnectionEnd {
        case done
        case retry(String)
        case failed(String)
        case timedOut
    }

    /// Streams over one connection: the header, the agent's RESUME, then
    /// standard input (kept until confirmed) while reading the answers.
    private func serve(_ fd: Int32, _ stream: inout SendStream) -> ConnectionEnd {
        var header = SocketProtocol.magic + " session=" + stream.session
        if let type { header += " type=" + type }
        if let format { header += " format=" + format.rawValue }
        guard UnixSocket.sendAll(fd, Array((header + "\n").utf8)) else {
            return .retry("the agent closed the connection at once")
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var resumed = false
        var sentUpTo: Int64 = 0
        var shutDown = false
        var answers: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        // The agent owes an answer since then (nil: it owes none).
        var owedSince: Int64? = monotonicMilliseconds()
        while true {
            if resumed, stream.inputEnded, !shutDown, sentUpTo == stream.end {
                shutdown(fd, Int32(SHUT_WR))  // end of input: the agent commits the rest and says DONE
                shutDown = true
                owedSince = owedSince ?? monotonicMilliseconds()
            }
            let toSend = resumed && sentUpTo < stream.end
            let readStdin = resumed && !stream.inputEnded && stream.keptCount < Self.maxKeptBytes
            var fds = [
                pollfd(fd: fd, events: Int16(POLLIN) | (toSend ? Int16(POLLOUT) : 0), revents: 0),
                pollfd(fd: 0, events: Int16(POLLIN), revents: 0),
            ]
            let wait =
                owedSince.map { Int32(clamping: max(0, $0 + timeoutMilliseconds - monotonicMilliseconds())) } ?? -1
            let ready = poll(&fds, readStdin ? 2 : 1, wait)
            if ready < 0 {
                if errno == EINTR { continue }
                return .retry("waiting for the agent failed: \(String(cString: strerror(errno)))")
            }
            if ready == 0, let since = owedSince, monotonicMilliseconds() - since >= timeoutMilliseconds {
                return .timedOut
            }
            if fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0, errno == EINTR || errno == EAGAIN { continue }
                if n <= 0 { return .retry("the agent went away (restarting? crashed?)") }
                answers += buffer[0..<n]
                while let newline = answers.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: answers[..<newline], as: UTF8.self)
                    answers.removeSubrange(...newline)
                    switch stream.handle(line) {
                    case .progress(let resumeAt):
                        if let resumeAt {
                            resumed = true
                            sentUpTo = resumeAt
                        }
                    case .refused(let message): printError(message)
                    case .done: return .done
                    case .retry(let reason): return .retry("the agent says: \(reason)")
                    case .failed(let reason): return .failed(reason)
                    }
                }
                // Owed: a confirmation of what was sent, or the last word.
                owedSince = stream.keptCount > 0 || shutDown ? monotonicMilliseconds() : nil
                if !resumed { owedSince = owedSince ?? monotonicMilliseconds() }
            }
            if resumed, sentUpTo < stream.end, fds[0].revents & Int16(POLLOUT) != 0 || !toSend {
                let chunk = stream.bytes(from: sentUpTo)
                let n = chunk.withUnsafeBytes {
                    Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                }
                if n > 0 {
                    sentUpTo += Int64(n)
                } else if n < 0, errno != EAGAIN, errno != EINTR {
                    return .retry("the agent went away (restarting? crashed?)")
                }
            }
            if readStdin, fds[1].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                if n < 0, errno == EINTR || errno == EAGAIN { continue }
                if n <= 0 {
                    stream.inputEnded = true
                } else {
                    if stream.keptCount == 0 { owedSince = monotonicMilliseconds() }
                    stream.append(buffer[0..<n])
                }
            }
        }
    }

    /// Connects again, retrying while the agent is away, until `--wait` has
    /// passed. Quiet when the agent is back within a few seconds (a reload);
    /// otherwise says once why it waits, and once when it resumes.
    private func reconnect(_ path: String, stream: SendStream, because reason: String) throws -> Int32 {
        let started = monotonicMilliseconds()
        let deadline = started + waitMilliseconds
        var pause: Int64 = 20
        var said = false
        while true {
            if let fd = try? connect(path, quiet: true) {
                if said { printError("ingestd send: the agent is back; resuming after line \(stream.confirmedLines).") }
                return fd
            }
            if !said, monotonicMilliseconds() - started >= Self.quietReconnectMilliseconds {
                printError(
                    "ingestd send: \(reason); waiting up to \(waitMilliseconds / 1000) s for it (--wait), not reading input meanwhile."
                )
                said = true
            }
            guard monotonicMilliseconds() + pause < deadline else { break }
            usleep(useconds_t(pause * 1000))
            pause = min(pause * 2, 1_000)
        }
        printError(
            "ingestd send: the agent at '\(path)' did not come back within \(waitMilliseconds / 1000) s (--wait)."
        )
        printError(unconfirmedAdvice(stream, "gave up"))
        throw ExitCodes.tempFail
    }

    private func unconfirmedAdvice(_ stream: SendStream, _ what: String) -> String {
        "ingestd send: \(what) after the agent confirmed \(stream.confirmedLines) lines"
            + (!stream.inputEnded ? " (this send was still reading its input)" : "")
            + ": send the lines after line \(stream.confirmedLines) again."
    }

    /// A random session id: 32 hex digits.
    static func newSessionID() -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        if getentropy(&bytes, bytes.count) != 0 {
            // No entropy call: time and pid still make a collision unlikely on one box.
            var seed = UInt64(bitPattern: Int64(monotonicMilliseconds())) ^ UInt64(getpid()) << 32
            for i in bytes.indices {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes[i] = UInt8(truncatingIfNeeded: seed >> 56)
            }
        }
        return bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// --socket; else the configuration's socket input: its `socket`, or
    /// the default in the state directory if that exists, else the one
    /// systemd's ingestd.socket makes (an agent the package runs).
    private func resolvedSocket() -> String {
        if let socketPath { return socketPath }
        guard let configuration = try? options.load(environment: processEnvironment()),
            let input = configuration.inputs.first(where: { $0.kind == .socket })
        else { return Self.packagedSocket }
        let path = configuration.socketPath(of: input)
        if input.socket != nil || access(path, F_OK) == 0 || access(Self.packagedSocket, F_OK) != 0 { return path }
        return Self.packagedSocket
    }

    private func connect(_ path: String, quiet: Bool) throws -> Int32 {
        guard var address = UnixSocket.address(path) else {
            printError("ingestd send: the socket path '\(path)' is too long.")
            throw ExitCodes.usageError
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard fd >= 0, connected == 0 else {
            let reason = String(cString: strerror(errno))
            if fd >= 0 { close(fd) }
            if !quiet {
                printError(
                    "ingestd send: cannot reach the agent at '\(path)': \(reason). Is it running with a socket input (kind = \"socket\")? Pass --socket or --config to point at it."
                )
            }
            throw ExitCodes.ioError
        }
        return fd
    }
}
