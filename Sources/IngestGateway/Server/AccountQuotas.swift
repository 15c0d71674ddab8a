import EdgeIngestCore

/// Per-account rate limits on received batches (issue 23): records and
/// bytes (decompressed) a second, each a token bucket holding
/// ``Limits/burstSeconds`` worth. A batch is admitted while the account's
/// buckets are not in debt, and then costs its records and bytes — so a
/// batch larger than the bucket still gets through, at the average rate —
/// else it is answered 429 with `Retry-After` (the seconds until the debt
/// is paid) before anything is stored. One account over its quota does not
/// slow another: each has its own buckets.
///
///     if case .wait(let seconds, _) = quotas.check(tenant: "key-gw-17", now: monotonicSeconds()) {
///         // 429, Retry-After: seconds — before the body is read into records
///     }
///     quotas.charge(tenant: "key-gw-17", records: 300, bytes: 40_000)  // once decoded
///
/// In memory, one entry per account that sent (accounts are bounded by the
/// accounts files; all anonymous users are one); a restart forgets it.
final class AccountQuotas: Sendable {
    struct Limits: Sendable, Hashable {
        /// Records a second per account; nil: no limit.
        var recordsPerSecond: Double?
        /// Bytes a second per account (after gzip is undone); nil: no limit.
        var bytesPerSecond: Double?
        /// How much unused quota an account may save up, in seconds of its rate.
        var burstSeconds: Double = 10

        var isLimited: Bool { recordsPerSecond != nil || bytesPerSecond != nil }
    }

    enum Decision: Equatable {
        case admit
        /// Refused: try again in `seconds` (at least 1). `log`: the first
        /// refusal of this account in a minute, worth a journal line.
        case wait(seconds: Int, log: Bool)
    }

    let limits: Limits

    private struct Buckets {
        var records: Double
        var bytes: Double
        var updated: Double
        var lastLogged: Double = -.infinity
    }

    private let buckets = PlainMutex<[String: Buckets]>([:])

    init(limits: Limits) {
        self.limits = limits
    }

    /// Whether `tenant` ("" for a server without accounts) may send a
    /// batch now: the buckets are refilled to `now` (monotonic seconds) and
    /// the answer depends on their debt only, so it is asked before the
    /// batch is decompressed or parsed; ``charge(tenant:records:bytes:)``
    /// then costs the batch.
    func check(tenant: String, now: Double) -> Decision {
        guard limits.isLimited else { return .admit }
        let recordCap = (limits.recordsPerSecond ?? 0) * limits.burstSeconds
        let byteCap = (limits.bytesPerSecond ?? 0) * limits.burstSeconds
        return buckets.withLock { all in
            var b = all[tenant] ?? Buckets(records: recordCap, bytes: byteCap, updated: now)
            let elapsed = max(0, now - b.updated)
            b.updated = now
            if let rate = limits.recordsPerSecond { b.records = min(recordCap, b.records + elapsed * rate) }
            if let rate = limits.bytesPerSecond { b.bytes = min(byteCap, b.bytes + elapsed * rate) }
            var wait = 0.0
            if let rate = limits.recordsPerSecond, b.records < 0 { wait = max(wait, -b.records / rate) }
            if let rate = limits.bytesPerSecond, b.bytes < 0 { wait = max(wait, -b.bytes / rate) }
            defer { all[tenant] = b }
            guard wait > 0 else { return .admit }
            let log = now - b.lastLogged >= 60
            if log { b.lastLogged = now }
            return .wait(seconds: max(1, Int(wait.rounded(.up))), log: log)
        }
    }

    /// Costs an admitted batch of `records` lines and `bytes` bytes (after
    /// gzip is undone) to `tenant`'s buckets, which may go into debt.
    func charge(tenant: String, records: Int, bytes: Int) {
        guard limits.isLimited else { return }
        buckets.withLock { all in
            guard var b = all[tenant] else { return }  // check() made it
            if limits.recordsPerSecond != nil { b.records -= Double(records) }
            if limits.bytesPerSecond != nil { b.bytes -= Double(bytes) }
            all[tenant] = b
        }
    }
}
