import EdgeIngestCore
import Logging
import ServiceLifecycle

/// What every input needs: its settings, the record types, the queue, its
/// counters, the rejects file, and how to batch commits.
struct InputContext: Sendable {
    var settings: InputSettings
    let types: [RecordType]
    let queue: DurableQueue
    let counters: InputCounters
    let rejects: RejectsFile?
    /// The input's rejected lines in the journal, shared by its streams.
    let rejectionLog: RejectionLog
    let commitMaxRecords: Int
    let commitIntervalMilliseconds: Int
    let logger: Logger
    /// Poked after each commit, so the uploader sends new readings at once.
    var committed: WakeSignal? = nil
    /// How often an idle input proves it is alive (its heartbeat): see
    /// ``idleHeartbeat(watchdogMicroseconds:)``.
    var idleHeartbeatMilliseconds = InputContext.idleHeartbeat(watchdogMicroseconds: nil)

    var commitIntervalSeconds: Double { Double(commitIntervalMilliseconds) / 1000 }

    /// A committer for this input, stopped (see ``QueueCommitter``) with the input's loop.
    /// With a `receipt`, repeated `_id`s are left out durably (``QueueCommitter/receipt``).
    func makeCommitter(stop: StopSignal, receipt: Receipt? = nil) -> QueueCommitter {
        QueueCommitter(
            queue: queue,
            counters: counters,
            stop: stop,
            committed: committed,
            logger: logger,
            receipt: receipt
        )
    }

    /// How long an input waits for data: the commit interval while read
    /// lines wait for a commit, else ``idleHeartbeatMilliseconds`` (an idle
    /// agent wakes rarely; see docs/BENCHMARKS.md, footprint).
    func waitMilliseconds(pending: Bool) -> Int32 {
        Int32(pending ? max(10, commitIntervalMilliseconds) : max(10, idleHeartbeatMilliseconds))
    }

    /// An idle input's heartbeat period: a quarter of the interval after
    /// which the status service calls an input wedged (the watchdog
    /// interval, or 30 s without a watchdog) — 7.5 s under the shipped unit's
    /// `WatchdogSec=30` — so a live input has four chances per interval and
    /// an idle one wakes rarely (docs/BENCHMARKS.md, footprint).
    static func idleHeartbeat(watchdogMicroseconds: UInt64?) -> Int {
        let wedgedAfterMilliseconds = watchdogMicroseconds.map { Int(clamping: $0 / 1_000) } ?? 30_000
        return max(10, wedgedAfterMilliseconds / 4)
    }

    /// A line ingestor for one stream of this input.
    func makeIngestor(
        committer: QueueCommitter,
        resumeAt start: LineIngestor.StreamProgress = .init(offset: 0, lines: 0, refused: 0)
    ) -> LineIngestor {
        LineIngestor(
            settings: settings,
            types: types,
            counters: counters,
            logger: logger,
            rejects: rejects,
            commitMaxRecords: commitMaxRecords,
            resumeAt: start,
            committer: committer,
            rejectionLog: rejectionLog
        )
    }

}
