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

            The socket: --socket, else the configuration's socket input, else \\
            /run/ingestd/ingestd.sock (the package's).

            Exit codes: 0 every line committed; 65 some lines were refused (the rest \\
            are committed); 74 the agent cannot be reached; 75 the agent stopped or \\
            went away before confirming every line (send the unconfirmed lines again: \\
            stderr says from which line).

            Example:
              sensor.py | ingestd send --type WeatherSensor
            """,
        options: ConfigurationOptions.specs + [socketOption.spec, typeOption.spec, formatOption.spec],
        command: SendCommand.self
    )
    static let socketOption = Option<String>("socket", "path", help: "The agent's socket.")
    static let typeOption = Option<String>(
        "type",
        "type",
        help: "The record type of readings that carry no _type (default: the input's)."
    )
    static let formatOption = Option.format(help: "ndjson or csv (default: the input's).")
    static let packagedSocket = "/run/ingestd/ingestd.sock"

    let options: ConfigurationOptions
    let socketPath: String?
    let type: String?
    let format: InputSettings.Format?

    init(_ arguments: ParsedArguments) throws(UsageError) {
        options = ConfigurationOptions(arguments)
        socketPath = arguments[Self.socketOption]
        type = arguments[Self.typeOption]
        format = try arguments.value(Self.formatOption)
        if let type, type.contains(where: { $0 == " " || $0 == "\n" }) {
            throw UsageError("--type must be a record type's name, got '\(type)'.", option: Self.typeOption.spec)
        }
    }

    func run() throws {
        let path = resolvedSocket()
        let fd = try connect(path)
        defer { close(fd) }
        var header = SocketProtocol.magic
        if let type { header += " type=" + type }
        if let format { header += " format=" + format.rawValue }
        guard UnixSocket.sendAll(fd, Array((header + "\n").utf8)) else {
            printError("ingestd send: the agent at '\(path)' closed the connection at once.")
            throw ExitCodes.tempFail
        }
        var session = SendSession()
        var stdinOpen = true
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var answers: [UInt8] = []
        while session.done == nil {
            var fds = [
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: 0, events: Int16(POLLIN), revents: 0),
            ]
            guard poll(&fds, stdinOpen ? 2 : 1, -1) >= 0 || errno == EINTR else { break }
            if fds[0].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n <= 0 { break }  // the agent went away
                answers += buffer[0..<n]
                while let newline = answers.firstIndex(of: UInt8(ascii: "\n")) {
                    session.handle(String(decoding: answers[..<newline], as: UTF8.self))
                    answers.removeSubrange(...newline)
                }
                if session.failed { break }
            }
            if stdinOpen, fds[1].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
                if n < 0, errno == EINTR { continue }
                if n <= 0 {
                    stdinOpen = false
                    shutdown(fd, Int32(SHUT_WR))  // end of input: the agent commits the rest and says DONE
                } else {
                    guard UnixSocket.sendAll(fd, Array(buffer[0..<n])) else { break }
                }
            }
        }
        if let done = session.done {
            if done.rejected > 0 {
                printError(
                    "ingestd send: \(done.rejected) of \(done.lines) lines refused (above); the others are committed."
                )
                throw ExitCodes.dataError
            }
            return
        }
        printError(
            "ingestd send: the agent \(session.failed ? "refused the stream" : "went away") after confirming \(session.committed) lines"
                + (stdinOpen ? " (this send was still reading its input)" : "")
                + ": send the lines after line \(session.committed) again."
        )
        throw ExitCodes.tempFail
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

    private func connect(_ path: String) throws -> Int32 {
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
            printError(
                "ingestd send: cannot reach the agent at '\(path)': \(reason). Is it running with a socket input (kind = \"socket\")? Pass --socket or --config to point at it."
            )
            throw ExitCodes.ioError
        }
        return fd
    }

}

/// What the agent has said to one `send`.
struct SendSession {
    var committed = 0
    var done: (lines: Int, rejected: Int)?
    var failed = false

    mutating func handle(_ answer: String) {
        let words = answer.split(separator: " ", maxSplits: 3)
        switch words.first {
        case "COMMITTED":
            committed = words.count > 1 ? Int(words[1]) ?? committed : committed
        case "REJECTED" where words.count >= 3:
            printError("line \(words[1]): \(words[2])" + (words.count > 3 ? ": \(words[3])" : ""))
        case "DONE" where words.count >= 3:
            done = (Int(words[1]) ?? 0, Int(words[2]) ?? 0)
        case "ERROR":
            printError("ingestd send: the agent says: \(answer.dropFirst("ERROR ".count))")
            failed = true
        default:
            break
        }
    }
}
