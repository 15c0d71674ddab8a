#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Milliseconds since the Unix epoch, from the wall clock.
package func wallClockMilliseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Int64(now.tv_sec) * 1_000 + Int64(now.tv_nsec) / 1_000_000
}

/// Seconds on the monotonic clock (for deadlines and durations).
package func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

/// Now as `2026-11-21T11:41:55.120Z`.
package func isoNow() -> String { isoTime(milliseconds: wallClockMilliseconds()) }

/// `2026-11-21T11:41:55.120Z` for milliseconds since the epoch.
package func isoTime(milliseconds: Int64) -> String {
    var t = time_t(milliseconds / 1000)
    var parts = tm()
    gmtime_r(&t, &parts)
    func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
    let ms = Int(milliseconds % 1000)
    let msText = ms < 10 ? "00\(ms)" : ms < 100 ? "0\(ms)" : "\(ms)"
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(msText)Z"
}
