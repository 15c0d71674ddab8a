import EdgeIngestCore
import Logging

/// Logs an input's rejected lines so that the journal's default view says
/// what happened: the message itself names the line, the input, the reason
/// and what was wrong (`Rejected line 5020 of stdin: malformed_json: …`),
/// and the fields stay for filtering. A flood of one reason is cut by
/// ``LogWindows`` to the first ``burst`` lines per ``windowSeconds``, then
/// one summary (`… and 4,990 more malformed_json rejections from stdin in
/// the last 60 s`). Every rejected line is still counted and written to the
/// rejects file.
///
/// One per input, shared by its streams (a file input's followed files), so
/// the limit holds per input and reason however many files it follows.
final class RejectionLog: Sendable {
    /// Lines of one reason logged one by one per window.
    static let burst = LogWindows.burst
    static let windowSeconds = LogWindows.seconds

    let input: String
    let logger: Logger
    private let windows = PlainMutex(LogWindows())

    init(input: String, logger: Logger) {
        self.input = input
        self.logger = logger
    }

    func rejected(_ rejection: LineRejection, line: Int, now: Double = monotonicSeconds()) {
        // Not `let (logIt, ended) = windows.withLock { … }`: Swift 6.0.3 (the
        // arm64 build's compiler) crashes lowering a tuple returned through
        // Mutex.withLock.
        var logIt = false
        var ended: LogWindows.Window?
        windows.withLock { (logIt, ended) = $0.admit(rejection.reason, now: now) }
        if let ended { summarize(rejection.reason, ended, now: now) }
        guard logIt else { return }
        logger.warning(
            "Rejected line \(line) of \(input): \(rejection.reason): \(rejection.message)",
            metadata: [
                "ingest.input": "\(input)", "ingest.line": "\(line)", "ingest.reason": "\(rejection.reason)",
                "ingest.detail": "\(rejection.message)",
            ]
        )
    }

    /// Logs the summary of every window that has ended (call it now and
    /// then, also while no lines come).
    func flushExpired(now: Double? = nil) {
        let ended = windows.withLock { windows -> [(key: String, window: LogWindows.Window)] in
            guard !windows.isEmpty else { return [] }  // the common case: no clock read
            return windows.takeExpired(now: now ?? monotonicSeconds())
        }
        guard !ended.isEmpty else { return }
        let time = now ?? monotonicSeconds()
        for (reason, window) in ended { summarize(reason, window, now: time) }
    }

    /// Logs every pending summary (the input stops or ends).
    func flushAll(now: Double = monotonicSeconds()) {
        let pending = windows.withLock { $0.takeAll() }
        for (reason, window) in pending { summarize(reason, window, now: now) }
    }

    private func summarize(_ reason: String, _ window: LogWindows.Window, now: Double) {
        guard window.suppressed > 0 else { return }
        let seconds = max(1, Int((min(now - window.start, Self.windowSeconds)).rounded(.up)))
        logger.warning(
            "… and \(LogText.grouped(Int64(window.suppressed))) more \(reason) rejections from \(input) in the last \(seconds) s",
            metadata: [
                "ingest.input": "\(input)", "ingest.reason": "\(reason)", "ingest.suppressed": "\(window.suppressed)",
            ]
        )
    }
}
