import EdgeIngestCore
import IngestAgent

#if canImport(Glibc)
import Glibc
#endif

/// Rewrites the status file after a command changed the queue while the
/// agent was stopped (`import`, `export --move`, `reset`, `repair`), so
/// that `ingestd status` shows the new numbers rather than those of the
/// agent's last run. The inputs' counters of that run are kept.
func refreshStoppedStatus(_ configuration: AgentConfiguration, queue: DurableQueue) {
    let previous = (try? readSmallTextFile(configuration.statusPath, limit: FileLimits.small))
        .flatMap { try? AgentStatus.decode($0) }
    guard let statistics = try? queue.statistics() else { return }
    var status = AgentStatus(
        state: .stopped,
        statistics: statistics,
        inputs: previous?.inputs ?? [],
        pid: previous?.pid ?? getpid()  // state "stopped": the pid is not used to tell if it runs
    )
    status.lastUpload = previous?.lastUpload
    do {
        try writeFileAtomically(configuration.statusPath, Array((status.json() + "\n").utf8), durable: false)
    } catch {
        printError(
            "ingestd: the status file was not updated (\(error)); `ingestd status` shows the last run's numbers."
        )
    }
}
