import EdgeIngestCore
import Logging

/// Logs an input's rejected lines so that the journal's default view says
/// what happened: the message itself names the line, the input, the reason
/// and what was wrong (`Rejected line 5020 of stdin: malformed_json: …`),
/// and the fields stay for filtering. A flood of one reason is cut to the
/// first ``burst`` lines per ``windowSeconds``, then one summary (`… and
/// 4,990 more malformed_json rejections from stdin in the last 60 s`), so
/// the journal's own rate limit (10,000 messages per 30 s per service on
/// Debian) never drops the messages that matter. Every rejected line is
/// still counted and written to the rejects file.
///
/// Not thread-safe: one input's ``LineIngestor`` owns it.
struct RejectionLog {
    /// Lines of one reason logged one by one per window.
    static let burst = 10
    static let windowSeconds = 60.0

    let input: String
    let logger: Logger
    private var windows: [String: Window] = [:]

    private struct Window {
        var start: Double
        var logged = 0
        var suppressed = 0
    }

    init(input: String, logger: Logger) {
        self.input = input
        self.logger = logger
    }

    mutating func rejected(_ rejection: LineRejection, line: Int, now: Double = monotonicSeconds()) {
        var window = windows[rejection.reason] ?? Window(start: now)
        if now - window.start >= Self.windowSeconds {
            summarize(rejection.reason, window, now: now)
            window = Window(start: now)
        }
        if window.logged < Self.burst {
            window.logged += 1
            logger.warning(
                "Rejected line \(line) of \(input): \(rejection.reason): \(rejection.message)",
                metadata: [
                    "ingest.input": "\(input)", "ingest.line": "\(line)", "ingest.reason": "\(rejection.reason)",
                    "ingest.detail": "\(rejection.message)",
                ]
            )
        } else {
            window.suppressed += 1
        }
        windows[rejection.reason] = window
    }

    /// Logs the summary of every window that has ended (call it now and
    /// then, also while no lines come).
    mutating func flushExpired(now: Double? = nil) {
        guard !windows.isEmpty else { return }  // the common case: no clock read
        let now = now ?? monotonicSeconds()
        for (reason, window) in windows where now - window.start >= Self.windowSeconds {
            summarize(reason, window, now: now)
            windows[reason] = nil
        }
    }

    /// Logs every pending summary (the input ends).
    mutating func flushAll(now: Double = monotonicSeconds()) {
        for (reason, window) in windows.sorted(by: { $0.key < $1.key }) { summarize(reason, window, now: now) }
        windows.removeAll()
    }

    private func summarize(_ reason: String, _ window: Window, now: Double) {
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
