import EdgeIngestCore
import IngestGateway

/// The HTTP input's counters hear what its gateway did: status.json,
/// the status text and `/metrics` show it as any input's.
extension InputCounters: GatewayObserver {
    package func answered(lines: Int64, accepted: Int64, duplicates: Int64, rejectedByReason: [String: Int64]) {
        update { s in
            s.problem = nil
            s.linesRead += lines
            s.accepted += accepted
            s.duplicates = (s.duplicates ?? 0) + duplicates
            for (reason, n) in rejectedByReason {
                s.rejected += n
                s.rejectedByReason[reason, default: 0] += n
            }
            s.heartbeatAt = monotonicMilliseconds()
        }
    }

    package func throttled() {
        update { $0.throttledBatches = ($0.throttledBatches ?? 0) + 1 }
    }

    package func queueFull(problem: String) {
        update { $0.problem = problem }
    }
}
