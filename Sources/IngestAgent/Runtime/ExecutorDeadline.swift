// Built only where Swift 6.3's executor SPI is (AgentExecutors.swift says why).
#if compiler(>=6.3) && !PLATFORM_EXECUTORS
/// Turns the delays and instants the Swift runtime schedules jobs with into
/// deadlines on ``JobLoop``'s clock (CLOCK_MONOTONIC nanoseconds).
///
/// The runtime schedules `Task.sleep` on `ContinuousClock` and
/// `SuspendingClock`, whose durations are `Swift.Duration`. Both become a
/// monotonic deadline: on a box that suspends (rare for an edge gateway) a
/// continuous-clock sleep ends late by the time spent suspended. A duration
/// of another type cannot be read here and counts as zero (the job runs at
/// once), as does a negative one.
enum ExecutorDeadline {
    static func after<Duration: DurationProtocol>(_ delay: Duration) -> UInt64 {
        JobLoop<Void>.now &+ nanoseconds(delay)
    }

    static func at<C: Clock>(_ instant: C.Instant, of clock: C) -> UInt64 {
        after(clock.now.duration(to: instant))
    }

    static func nanoseconds<Duration: DurationProtocol>(_ duration: Duration) -> UInt64 {
        guard let duration = duration as? Swift.Duration, duration > .zero else { return 0 }
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow, whole <= Int64.max / 2 else { return UInt64(Int64.max / 2) }  // ~146 years
        return UInt64(whole) + UInt64(attoseconds / 1_000_000_000)
    }
}
#endif
