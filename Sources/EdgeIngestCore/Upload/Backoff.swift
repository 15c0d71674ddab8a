/// Exponential backoff with full jitter, capped (the AWS architecture
/// blog's "full jitter"; async-http-client's pool does the same): attempt
/// n waits a random time in [0, min(cap, base × 2^n)], and never less than
/// what the server asked for with `Retry-After`.
public struct Backoff: Sendable, Equatable {
    /// The first delay's upper bound. The default is 0.5 s.
    public var baseSeconds: Double = 0.5
    /// The largest delay. The default is 60 s.
    public var capSeconds: Double = 60

    public init(baseSeconds: Double = 0.5, capSeconds: Double = 60) {
        self.baseSeconds = baseSeconds
        self.capSeconds = capSeconds
    }

    /// The delay before retry `attempt` (0-based). `unit` is a random
    /// number in [0, 1): tests pass fixed values.
    public func delay(attempt: Int, retryAfterSeconds: Double?, unit: Double) -> Double {
        let exponential = baseSeconds * Double(1 << min(attempt, 30))
        let jittered = min(capSeconds, exponential) * min(max(unit, 0), 1)
        guard let retryAfter = retryAfterSeconds else { return jittered }
        // Honour the server, but never wait longer than an hour on its word.
        return max(jittered, min(retryAfter, 3_600))
    }
}
