/// Cuts floods of one kind of log line: per key, the first ``burst`` events
/// of each ``seconds``-long window are logged one by one, the rest only
/// counted, so a summary can say how many went unlogged. The journal's own
/// rate limit (10,000 messages per 30 s per service on Debian) then never
/// drops the lines that matter. Not thread-safe: keep it in a `Mutex`.
///
/// ```swift
/// var windows = LogWindows()
/// let (log, ended) = windows.admit("malformed_json", now: monotonicSeconds())
/// if let ended, ended.suppressed > 0 { /* "… and N more in the last 60 s" */ }
/// if log { /* the line itself */ }
/// ```
package struct LogWindows: Sendable {
    /// One key's window: when it started, lines logged, events not logged.
    package struct Window: Sendable {
        package var start: Double
        package var logged = 0
        package var suppressed = 0
    }

    package static let burst = 10
    package static let seconds = 60.0

    private var windows: [String: Window] = [:]

    package init() {}

    package var isEmpty: Bool { windows.isEmpty }

    /// `count` events of `key` at `now` (monotonic seconds): whether to log
    /// them, and the key's previous window if it just ended (to summarize).
    package mutating func admit(_ key: String, count: Int = 1, now: Double) -> (log: Bool, ended: Window?) {
        var window = windows[key] ?? Window(start: now)
        var ended: Window?
        if now - window.start >= Self.seconds {
            ended = window
            window = Window(start: now)
        }
        let log = window.logged < Self.burst
        if log { window.logged += 1 } else { window.suppressed += count }
        windows[key] = window
        return (log, ended)
    }

    /// Removes and returns the windows that have ended by `now`, by key.
    package mutating func takeExpired(now: Double) -> [(key: String, window: Window)] {
        let ended = windows.filter { now - $0.value.start >= Self.seconds }
        for key in ended.keys { windows[key] = nil }
        return ended.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    /// Removes and returns every window, by key.
    package mutating func takeAll() -> [(key: String, window: Window)] {
        defer { windows.removeAll() }
        return windows.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }
}
