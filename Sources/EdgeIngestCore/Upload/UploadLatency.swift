/// How long the sink took to answer each request since the agent started,
/// as a histogram (Prometheus's shape: counts per upper bound, a sum and a
/// count), for `/metrics`.
public struct UploadLatency: Sendable, Hashable, Codable {
    /// The buckets' upper bounds, in seconds (each count is of answers that
    /// took longer than the bound before it, up to this one).
    public static let boundsSeconds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    /// One count per bound, then one for slower answers (not cumulative).
    public var counts: [Int64] = Array(repeating: 0, count: UploadLatency.boundsSeconds.count + 1)
    public var sumSeconds: Double = 0
    public var count: Int64 = 0

    public init() {}

    package mutating func record(seconds: Double) {
        let index = Self.boundsSeconds.firstIndex { seconds <= $0 } ?? Self.boundsSeconds.count
        counts[index] += 1
        sumSeconds += seconds
        count += 1
    }
}
