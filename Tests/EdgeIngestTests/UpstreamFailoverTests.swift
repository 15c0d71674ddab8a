import Testing

@testable import EdgeIngestCore

/// `urls = [primary, secondary]`: when the next upstream is used, and when
/// the first is tried again (docs/SINKS.md "Failover").
@Suite struct UpstreamFailoverTests {
    let down = UploadOutcome.retry(reason: "Could not connect", retryAfterSeconds: nil)
    let stored = UploadOutcome.stored(rejected: [])

    @Test func theNextUpstreamIsUsedAfterTheBoundedFailuresAndTheFirstAgainLater() {
        var failover = UpstreamFailover(
            urls: ["http://a/", "http://b/"],
            failuresBeforeSwitch: 3,
            failbackMilliseconds: 1_000
        )
        for attempt in 1...2 {
            #expect(failover.url(now: 0) == "http://a/")
            #expect(failover.record(down, now: 0) == down, "attempt \(attempt) stays on a")
        }
        #expect(failover.url(now: 0) == "http://a/")
        let third = failover.record(down, now: 0)
        #expect(third.reason.contains("failing over from http://a/ to http://b/ (upstream 2 of 2)"))
        #expect(failover.url(now: 10) == "http://b/")
        #expect(failover.record(stored, now: 10) == stored)
        // Before the failback interval: still b.
        #expect(failover.url(now: 900) == "http://b/")
        #expect(failover.record(stored, now: 900) == stored)
        // After it: one attempt at a; it still fails, so back to b at once.
        #expect(failover.url(now: 1_100) == "http://a/")
        #expect(failover.record(down, now: 1_100).reason.contains("back to http://b/"))
        #expect(failover.url(now: 1_200) == "http://b/")
        #expect(failover.record(stored, now: 1_200) == stored)
        // a is back: the next failback attempt succeeds and a stays.
        #expect(failover.url(now: 2_300) == "http://a/")
        #expect(failover.record(stored, now: 2_300) == stored)
        #expect(failover.url(now: 9_000) == "http://a/")
    }

    @Test func aHoldSwitchesAtOnceWhileAnUpstreamIsUntried() {
        var failover = UpstreamFailover(urls: ["http://a/", "http://b/"], failuresBeforeSwitch: 3)
        _ = failover.url(now: 0)
        let first = failover.record(.hold(reason: "HTTP 404"), now: 0)
        #expect(first.reason.contains("failing over") && !first.isStored)
        guard case .retry = first else {
            Issue.record("a hold with an untried upstream should be retried there, got \(first)")
            return
        }
        #expect(failover.url(now: 1) == "http://b/")
        // Both refuse: the hold stands.
        #expect(failover.record(.hold(reason: "HTTP 404"), now: 1) == .hold(reason: "HTTP 404"))
    }

    @Test func oneUpstreamPassesEveryOutcomeThrough() {
        var failover = UpstreamFailover(urls: ["http://a/"], failuresBeforeSwitch: 1)
        for _ in 0..<5 {
            #expect(failover.url(now: 0) == "http://a/")
            #expect(failover.record(down, now: 0) == down)
        }
    }

    @Test func anAnswerResetsTheCount() {
        var failover = UpstreamFailover(urls: ["http://a/", "http://b/"], failuresBeforeSwitch: 2)
        for _ in 0..<4 {
            _ = failover.url(now: 0)
            #expect(failover.record(down, now: 0) == down)
            _ = failover.url(now: 0)
            #expect(failover.record(.badBatch(reason: "HTTP 400"), now: 0) == .badBatch(reason: "HTTP 400"))
        }
        #expect(failover.url(now: 0) == "http://a/")
    }
}
