import EdgeIngestCore
import Logging

/// Logs refused and throttled logins so that a flood (a client guessing
/// passwords, a fleet with a wrong key) is readable in the journal: the
/// first ``LogWindows/burst`` of each kind per minute one by one, then one
/// summary for the rest of that minute (88,915 lines, 18.9 MB in 25 s from
/// one client before). Never the key, email or password: the provider and
/// the peer only.
final class LoginLog: Sendable {
    enum Kind: String, Sendable {
        case refused = "Refused a login"
        case throttled = "Throttled a login after repeated failures"

        var plural: String { self == .refused ? "refused logins" : "throttled logins" }
    }

    let logger: Logger
    let input: String
    private let windows = PlainMutex(LogWindows())

    init(input: String, logger: Logger) {
        self.input = input
        self.logger = logger
    }

    func log(_ kind: Kind, metadata: Logger.Metadata, now: Double = monotonicSeconds()) {
        var logIt = false
        var ended: LogWindows.Window?
        windows.withLock { (logIt, ended) = $0.admit(kind.rawValue, now: now) }
        if let ended { summarize(kind, ended, now: now) }
        guard logIt else { return }
        logger.warning("\(kind.rawValue)", metadata: metadata)
    }

    /// Logs the summary of every window that has ended: call it now and
    /// then (each request does), so a flood's last minute is told too.
    func flushExpired(now: Double? = nil) {
        // Every request calls this: with no flood (the common case) no clock is read.
        var time = now ?? 0
        let ended = windows.withLock { windows -> [(key: String, window: LogWindows.Window)] in
            guard !windows.isEmpty else { return [] }
            time = now ?? monotonicSeconds()
            return windows.takeExpired(now: time)
        }
        for (key, window) in ended {
            if let kind = Kind(rawValue: key) { summarize(kind, window, now: time) }
        }
    }

    private func summarize(_ kind: Kind, _ window: LogWindows.Window, now: Double) {
        guard window.suppressed > 0 else { return }
        let seconds = max(1, Int(min(now - window.start, LogWindows.seconds).rounded(.up)))
        logger.warning(
            "… and \(LogText.grouped(Int64(window.suppressed))) more \(kind.plural) on \(input) in the last \(seconds) s",
            metadata: ["ingest.input": "\(input)", "ingest.suppressed": "\(window.suppressed)"]
        )
    }
}
