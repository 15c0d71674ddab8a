#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One libpq connection, used from one thread. Answers are awaited with a
/// deadline (`PQsendQueryParams`, then `poll` before every `PQgetResult`),
/// so a server that stops answering costs `timeout_ms`, not the agent's
/// shutdown. Sending itself blocks (a batch is one write); a peer that
/// stops reading is bounded by `tcp_user_timeout` (= `timeout_ms`).
///
/// ```swift
/// let db = try PostgresConnection(settings: settings)
/// let rows = try db.execute("SELECT column_name FROM information_schema.columns WHERE table_name = $1", ["weather"]).firstColumn
/// ```
final class PostgresConnection {
    private let pq: LibPQ
    private let handle: LibPQ.Connection
    let timeoutMilliseconds: Int

    /// What a statement returned: the first column of its rows as text
    /// (all the sink reads), and how many rows an INSERT touched.
    struct Answer {
        var firstColumn: [String]  // NULL reads as ""
        var affected: Int
    }

    init(settings: PostgresSettings) throws(PostgresError) {
        let pq = try LibPQ.shared()
        self.pq = pq
        timeoutMilliseconds = settings.timeoutMilliseconds
        // Processed in order, the last value of a key wins: our defaults
        // come before the URL (expanded from `dbname`), so the URL can
        // override them; password_file's password comes after it.
        var parameters: [(String, String)] = [
            ("connect_timeout", String(max(2, (settings.connectTimeoutMilliseconds + 999) / 1000))),
            ("application_name", "ingestd"),
            ("client_encoding", "UTF8"),
            // A dead peer or a pulled cable is noticed within about 30 s.
            ("keepalives_idle", "15"), ("keepalives_interval", "5"), ("keepalives_count", "3"),
            ("tcp_user_timeout", String(settings.timeoutMilliseconds)),
            ("dbname", settings.url),
        ]
        if let password = settings.password { parameters.append(("password", password)) }
        let keywords = parameters.map { strdup($0.0) } + [nil]
        let values = parameters.map { strdup($0.1) } + [nil]
        defer { (keywords + values).forEach { free($0) } }
        let connection = keywords.map { UnsafePointer($0) }.withUnsafeBufferPointer { k in
            values.map { UnsafePointer($0) }.withUnsafeBufferPointer { v in
                pq.connectdbParams(k.baseAddress, v.baseAddress, 1)
            }
        }
        guard let connection else {
            throw PostgresError(kind: .connection, message: "libpq could not allocate a connection")
        }
        guard pq.status(connection) == LibPQ.connectionOK else {
            let message = pq.errorMessage(connection).map { String(cString: $0) } ?? "unknown error"
            pq.finish(connection)
            let shown = PostgresError.withoutSecrets(message, url: settings.url, password: settings.password)
            // A URL libpq cannot parse is fixed by editing it, not by retrying.
            let unparsable = [
                "connection info string", "invalid URI", "invalid percent-encoded", "invalid connection option",
            ].contains { message.contains($0) }
            throw PostgresError(
                kind: unparsable ? .configuration : .connection,
                message: "cannot connect to \(redactedURL(settings.url)): \(PostgresError.oneLine(shown))"
                    + (unparsable ? ": fix upload.url" : "")
            )
        }
        handle = connection
        // Notices ("relation already exists, skipping") would go to stderr.
        _ = pq.setNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit { pq.finish(handle) }

    /// Whether the connection broke (the next statement would fail too).
    var isBroken: Bool { pq.status(handle) != LibPQ.connectionOK }

    /// Runs one statement with text parameters (`$1`, `$2`, …; nil is NULL).
    func execute(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) -> Answer {
        try execute(sql, cStrings: parameters.map { $0.map { Array($0.utf8) + [0] } })
    }

    /// Runs one statement whose parameters are NUL-terminated UTF-8 bytes
    /// (no copy is made: a batch's JSON is passed as it is).
    func execute(_ sql: String, cStrings parameters: [[UInt8]?]) throws(PostgresError) -> Answer {
        precondition(parameters.allSatisfy { $0 == nil || $0?.last == 0 }, "parameters must end in NUL")
        let sent = withPointers(to: parameters) { pointers in
            pointers.withUnsafeBufferPointer {
                pq.sendQueryParams(handle, sql, Int32(parameters.count), nil, $0.baseAddress, nil, nil, 0)
            }
        }
        guard sent == 1 else { throw connectionError("sending a statement") }
        let deadline = monotonicMilliseconds() + Int64(timeoutMilliseconds)
        var first: PostgresError?
        var answer = Answer(firstColumn: [], affected: 0)
        // Every result must be read before the connection takes a new
        // statement; each PQgetResult may wait, so each waits for its input first.
        while true {
            try awaitInput(until: deadline)
            guard let result = pq.getResult(handle) else { break }
            defer { pq.clear(result) }
            let status = pq.resultStatus(result)
            if status == LibPQ.commandOK || status == LibPQ.tuplesOK {
                answer.affected = pq.cmdTuples(result).flatMap { Int(String(cString: $0)) } ?? 0
                for row in 0..<pq.ntuples(result) {
                    answer.firstColumn.append(pq.getvalue(result, row, 0).map { String(cString: $0) } ?? "")
                }
            } else if first == nil {
                let state = pq.resultErrorField(result, LibPQ.fieldSQLState).map { String(cString: $0) }
                let message =
                    pq.resultErrorField(result, LibPQ.fieldPrimaryMessage).map { String(cString: $0) } ?? "no message"
                first =
                    state.map { PostgresError.server(sqlState: $0, primaryMessage: message) }
                    ?? connectionError("reading the answer")
            }
        }
        if let first { throw first }
        return answer
    }

    /// Waits until PQgetResult would not block, or the deadline passes.
    private func awaitInput(until deadline: Int64) throws(PostgresError) {
        while true {
            guard pq.consumeInput(handle) == 1 else { throw connectionError("reading the answer") }
            if pq.isBusy(handle) == 0 { return }
            let left = deadline - monotonicMilliseconds()
            guard left > 0 else {
                throw PostgresError(
                    kind: .timeout,
                    message: "PostgreSQL did not answer within \(timeoutMilliseconds) ms (upload.timeout_ms)"
                )
            }
            var descriptor = pollfd(fd: pq.socket(handle), events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, Int32(min(left, 1_000)))
        }
    }

    private func connectionError(_ doing: String) -> PostgresError {
        let message = pq.errorMessage(handle).map { String(cString: $0) } ?? ""
        return PostgresError(
            kind: .connection,
            message: "the PostgreSQL connection failed while \(doing): \(PostgresError.oneLine(message))"
        )
    }
}

/// Calls `body` with C pointers to `values` (nil stays a null pointer).
private func withPointers<R>(to values: [[UInt8]?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    var pointers: [UnsafePointer<CChar>?] = []
    func next(_ index: Int) -> R {
        guard index < values.count else { return body(pointers) }
        guard let bytes = values[index] else {
            pointers.append(nil)
            return next(index + 1)
        }
        return bytes.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                pointers.append(chars.baseAddress)
                return next(index + 1)
            }
        }
    }
    return next(0)
}
