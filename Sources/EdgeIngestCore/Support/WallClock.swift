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

/// Milliseconds on the monotonic clock (for deadlines).
package func monotonicMilliseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1_000 + Int64(now.tv_nsec) / 1_000_000
}

/// Now as `2026-11-21T11:41:55.120Z`.
package func isoNow() -> String { isoTime(milliseconds: wallClockMilliseconds()) }

/// `2026-11-21T11:41:55.120Z` for milliseconds since the epoch (the same
/// formatter that writes timestamp fields into records).
package func isoTime(milliseconds: Int64) -> String { Timestamp.iso8601(milliseconds: milliseconds) }
