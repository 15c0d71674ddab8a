import EdgeIngestCore
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// One `ingestd send` on a ``SocketInput``: reads its header and lines,
/// commits them, and tells the sender what is committed and refused.
/// Runs on the connection's own thread.
struct SocketConnection {
    let fd: Int32
    let context: InputContext
    let stop: StopSignal
    let sessions: ActiveSocketSessions
    /// The run's reload, if it may reload: a session's connection stopped by
    /// it is parked in its hand-over instead of being told to reconnect.
    var reload: Reload? = nil

    static var magic: String { SocketProtocol.magic }
    static let maxHeaderBytes = 512

    /// Serves a connection the last run parked through its reload: the
    /// header is known, and the stream goes on where its commit ended
    /// (the bytes read past it come first). False when parked again.
    func serve(resuming parked: SocketHandover.Parked) -> Bool {
        guard sessions.claim(parked.session.id) else {
            answer("RETRY this send session is still being served on another connection: reconnect")
            return true
        }
        defer { sessions.release(parked.session.id) }
        var connection = context
        connection.settings = parked.settings
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        return serving(connection, session: parked.session, first: parked.unframed, resumed: true, buffer: &buffer)
    }

    /// Serves a new connection; false when it was parked (its descriptor
    /// stays open for the next run).
    func serve() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var pending: [UInt8] = []
        // The header: one short line, within the idle heartbeat.
        while !pending.contains(UInt8(ascii: "\n")) {
            guard pending.count < Self.maxHeaderBytes, case .readable = wait(), let n = read(into: &buffer), n > 0
            else {
                answer("ERROR expected a first line '\(Self.magic)' (ingestd send writes it)")
                return true
            }
            pending += buffer[0..<n]
        }
        let newline = pending.firstIndex(of: UInt8(ascii: "\n"))!
        let header = String(decoding: pending[..<newline], as: UTF8.self)
        let rest = Array(pending[(newline + 1)...])
        let settings: InputSettings
        let session: SocketSession?
        switch parse(header) {
        case .success(let parsed): (settings, session) = parsed
        case .failure(let problem):
            answer("ERROR \(problem.message)")
            return true
        }
        if let session {
            guard sessions.claim(session.id) else {
                answer("RETRY this send session is still being served on another connection: reconnect")
                return true
            }
        }
        defer { if let session { sessions.release(session.id) } }
        var connection = context
        connection.settings = settings
        return serving(connection, session: session, first: rest, resumed: false, buffer: &buffer)
    }

    /// Streams, answering an error that ends it; false when parked.
    private func serving(
        _ connection: InputContext,
        session: SocketSession?,
        first: [UInt8],
        resumed: Bool,
        buffer: inout [UInt8]
    ) -> Bool {
        do {
            return try stream(connection, session: session, first: first, resumed: resumed, buffer: &buffer)
        } catch {
            answer("ERROR \(error)")
            context.logger.error(
                "A sender's readings could not be committed",
                metadata: ["ingest.input": "\(connection.settings.name)", "error": "\(error)"]
            )
            return true
        }
    }

    /// False when the connection was parked for the next run.
    private func stream(
        _ connection: InputContext,
        session: SocketSession?,
        first: [UInt8],
        resumed: Bool,
        buffer: inout [UInt8]
    ) throws -> Bool {
        let resumeAt = try session?.resumePoint(in: connection.queue) ?? .init(offset: 0, lines: 0, refused: 0)
        var ingestor = connection.makeIngestor(committer: connection.makeCommitter(stop: stop), resumeAt: resumeAt)
        if let session {
            ingestor.positionSource = session.source
            ingestor.positionEncoder = SocketSession.encode
            // A parked connection's sender heard RESUME long ago: it goes on.
            if !resumed { answer("RESUME \(resumeAt.lines) \(resumeAt.offset)") }
        }
        let fd = self.fd
        var rejected = 0
        ingestor.onReject = { line, rejection in
            rejected += 1
            SocketInput.write(fd, "REJECTED \(line) \(rejection.reason) \(Self.oneLine(rejection.message))\n")
        }
        // With a session, COMMITTED also says up to which byte of the
        // stream, so the sender can let go of what it kept.
        func committed() -> String {
            "COMMITTED \(ingestor.linesHandled)" + (session == nil ? "" : " \(ingestor.committedOffset)")
        }
        if !first.isEmpty {
            // Lines that came with the header are committed and answered
            // now, not when more arrives (a sender may wait for the answer).
            try first.withUnsafeBytes { try ingestor.feed($0) }
            if ingestor.hasPending {
                try ingestor.flushAndWait(summarizeAll: false)
                answer(committed())
            }
        }
        while true {
            switch wait() {
            case .stopped:
                try ingestor.flushAndWait()
                answer(committed())
                if let session, let parked = parkable(session, connection.settings, ingestor.unframedBytes) {
                    reload?.handover.park(parked)
                    return false  // the next run serves it on
                }
                if session != nil {
                    answer("RETRY the agent is stopping or reloading: reconnect and resume")
                } else {
                    answer("ERROR the agent is stopping: send the lines after \(ingestor.linesHandled) again")
                }
                return true
            case .timeout:
                continue
            case .readable:
                break
            }
            guard let n = read(into: &buffer) else {
                try ingestor.flushAndWait()
                answer(committed())
                return true  // the sender went away
            }
            if n == 0 {
                try ingestor.finish()
                answer(committed())
                // A session's totals span its connections.
                answer("DONE \(ingestor.linesHandled) \(session == nil ? Int64(rejected) : ingestor.refusedLines)")
                return true
            }
            try buffer.withUnsafeBytes { try ingestor.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            try ingestor.flushAndWait(summarizeAll: false)
            answer(committed())
        }
    }

    /// The connection as the next run takes it, when this stop is a reload
    /// whose configuration has this input again and the framer holds its
    /// unread line (not while skipping an overlong one); else nil.
    private func parkable(
        _ session: SocketSession,
        _ settings: InputSettings,
        _ unframed: [UInt8]?
    ) -> SocketHandover.Parked? {
        guard let next = reload?.acceptedConfiguration, let unframed,
            next.inputs.contains(where: { $0.kind == .socket && $0.name == context.settings.name })
        else { return nil }
        return SocketHandover.Parked(
            fd: fd,
            input: context.settings.name,
            settings: settings,
            session: session,
            unframed: unframed
        )
    }

    /// The input's settings with what the header overrides, and the session.
    private func parse(_ header: String) -> Result<(InputSettings, SocketSession?), HeaderProblem> {
        let words = header.split(separator: " ")
        guard words.count >= 2, words[0] + " " + words[1] == Self.magic else {
            return .failure(HeaderProblem("expected a first line '\(Self.magic)' (ingestd send writes it)"))
        }
        var settings = context.settings
        var session: SocketSession?
        for word in words.dropFirst(2) {
            let parts = word.split(separator: "=", maxSplits: 1)
            guard parts.count == 2 else {
                return .failure(HeaderProblem("'\(word.prefix(40))' in the header is not name=value"))
            }
            switch parts[0] {
            case "type": settings.type = String(parts[1])
            case "format":
                guard let format = InputSettings.Format(rawValue: String(parts[1])) else {
                    return .failure(HeaderProblem("format must be ndjson or csv, got '\(parts[1].prefix(40))'"))
                }
                settings.format = format
            case "session":
                guard let parsed = SocketSession(id: parts[1]) else {
                    return .failure(HeaderProblem("session must be 16 to 64 characters of [0-9A-Za-z_-]"))
                }
                session = parsed
            default:
                return .failure(
                    HeaderProblem(
                        "unknown header field '\(parts[0].prefix(40))': type, format and session are known"
                    )
                )
            }
        }
        return .success((settings, session))
    }

    private func wait() -> Readiness {
        Readiness.wait(fd: fd, stop: stop, timeoutMs: context.waitMilliseconds(pending: false))
    }

    /// Reads a chunk; nil on an error (the sender went away).
    private func read(into buffer: inout [UInt8]) -> Int? {
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            return n < 0 ? nil : n
        }
    }

    private func answer(_ line: String) { SocketInput.write(fd, line + "\n") }

    struct HeaderProblem: Error {
        let message: String
        init(_ message: String) { self.message = message }
    }

    static func oneLine(_ text: String) -> String { String(text.map { $0 == "\n" || $0 == "\r" ? " " : $0 }) }
}

/// What `ingestd send` and a ``SocketInput`` say to each other first.
package enum SocketProtocol {
    /// The first line a sender writes, before ` type=…` and ` format=…`.
    package static let magic = "EDGEINGEST-SEND 1"
}
