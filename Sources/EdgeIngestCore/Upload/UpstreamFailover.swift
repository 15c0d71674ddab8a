/// Which of several equivalent upstreams (`urls = [primary, secondary, …]`:
/// gateways that forward into one deduplicating engine) a sink sends to.
/// A pure state machine: the sink asks for the URL of each attempt and
/// tells it the outcome (docs/SINKS.md "Failover").
///
/// - After `failuresBeforeSwitch` passing failures in a row (no answer,
///   5xx, 429) the next upstream is used; an answer that holds (TLS or a
///   configuration the upstream refuses: 403, 404) switches at once while
///   some upstream of the streak is untried.
/// - On a secondary, the primary is tried again every `failbackMilliseconds`:
///   one attempt; if it fails, the secondary that worked takes over again.
/// - The batch is the same whichever upstream answers (its `_id`s and its
///   `Idempotency-Key`), so a batch one gateway stored before its answer
///   was lost and another stores again is one row in the engine.
///
/// ```swift
/// var failover = UpstreamFailover(urls: ["http://gw-a/ingest/v1/batches", "http://gw-b/ingest/v1/batches"])
/// let url = failover.url(now: monotonicMilliseconds())
/// let outcome = failover.record(post(batch, to: url), now: monotonicMilliseconds())
/// ```
package struct UpstreamFailover: Sendable {
    package let urls: [String]
    package let failuresBeforeSwitch: Int
    package let failbackMilliseconds: Int64
    /// The upstream in use (an index into ``urls``).
    package private(set) var current = 0
    private var failures = 0
    /// Upstreams that held in the current streak of failures.
    private var held: Set<Int> = []
    /// Since when (monotonic ms) a secondary has been in use.
    private var onSecondarySince: Int64?
    /// The secondary to return to when a failback attempt fails.
    private var probingFrom: Int?

    package init(urls: [String], failuresBeforeSwitch: Int = 3, failbackMilliseconds: Int64 = 300_000) {
        precondition(!urls.isEmpty, "at least one upstream")
        self.urls = urls
        self.failuresBeforeSwitch = max(1, failuresBeforeSwitch)
        self.failbackMilliseconds = failbackMilliseconds
    }

    /// The URL of the next attempt.
    package mutating func url(now: Int64) -> String {
        if current != 0, probingFrom == nil, let since = onSecondarySince, now - since >= failbackMilliseconds {
            probingFrom = current
            current = 0
        }
        return urls[current]
    }

    /// Takes the outcome of an attempt at ``current``; returns it, with the
    /// switch (if any) said in its reason, and a hold turned into a retry
    /// when another upstream is still to be tried.
    package mutating func record(_ outcome: UploadOutcome, now: Int64) -> UploadOutcome {
        let failed: (reason: String, held: Bool)?
        switch outcome {
        case .retry(let reason, _): failed = (reason, false)
        case .hold(let reason): failed = (reason, true)
        default: failed = nil
        }
        guard let failed else {
            // An answer: this upstream works.
            failures = 0
            held = []
            if let _ = probingFrom {
                probingFrom = nil
                onSecondarySince = nil
            }
            return outcome
        }
        guard urls.count > 1 else { return outcome }
        if let secondary = probingFrom {
            probingFrom = nil
            current = secondary
            onSecondarySince = now
            return .retry(
                reason: failed.reason + "; the primary upstream still fails: back to " + redactedURL(urls[current]),
                retryAfterSeconds: nil
            )
        }
        if failed.held {
            held.insert(current)
            guard held.count < urls.count else { return outcome }
        } else {
            failures += 1
            guard failures >= failuresBeforeSwitch else { return outcome }
        }
        let from = current
        current = (current + 1) % urls.count
        failures = 0
        onSecondarySince = current == 0 ? nil : (onSecondarySince ?? now)
        return .retry(
            reason: failed.reason
                + "; failing over from \(redactedURL(urls[from])) to \(redactedURL(urls[current])) (upstream \(current + 1) of \(urls.count))",
            retryAfterSeconds: nil
        )
    }
}
