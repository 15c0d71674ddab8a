import EdgeIngestCore
import Logging

/// How the agent opens its queue: an unattended box never stays down on a
/// damaged file. A file SQLite or the format checks call damaged is
/// repaired as `ingestd repair` would (the damaged file copied aside
/// first, every readable row kept, what was lost counted as dropped
/// (damaged) — from the status file's last numbers when the file's own
/// counters went with the damage). A file too damaged even to rebuild is
/// moved aside whole (`<file>.corrupt-<ms>`) and an empty queue started,
/// its lost readings counted the same way. Either way the journal says
/// what happened and where the copy is; nothing waits for a person.
enum QueueOpening {
    static func open(_ configuration: AgentConfiguration, logger: Logger) throws -> DurableQueue {
        do {
            return try DurableQueue.open(configuration.queueConfiguration, logger: logger)
        } catch let error as EdgeIngestError
            where error.code == .queueCorrupt && configuration.queueConfiguration.location.path != nil
        {
            logger.error(
                "The queue file is damaged; repairing it before starting (a copy of the damaged file is kept)",
                metadata: ["ingest.reason": "\(error.message)"]
            )
            let lastKnown = AgentStatus.lastKnownQueueNumbers(statusPath: configuration.statusPath)
            do {
                let repair = try DurableQueue.repair(
                    configuration.queueConfiguration,
                    lastKnown: lastKnown,
                    logger: logger
                )
                logger.error(
                    "Repaired the damaged queue file; collecting goes on",
                    metadata: [
                        "queue.damaged_copy": "\(repair.damagedFileCopy ?? "none (repaired in place)")",
                        "records.quarantined": "\(repair.quarantined.reduce(Int64(0)) { $0 + $1.records })",
                        "records.lost": "\(max(0, repair.accountingCorrection))",
                        "gateway.rows_forgotten": "\(repair.gatewayMemoryForgotten)",
                    ]
                )
            } catch let failure as EdgeIngestError where failure.code == .queueCorrupt {
                return try startOver(configuration, lastKnown: lastKnown, because: failure, logger: logger)
            }
            return try DurableQueue.open(configuration.queueConfiguration, logger: logger)
        }
    }

    /// Moves a file that cannot be rebuilt aside and starts an empty queue,
    /// counting what it held (as last known) as dropped (damaged).
    private static func startOver(
        _ configuration: AgentConfiguration,
        lastKnown: QueueStatistics?,
        because failure: EdgeIngestError,
        logger: Logger
    ) throws -> DurableQueue {
        var settings = configuration.queueConfiguration
        settings.quarantineCorruptFile = true
        let queue = try DurableQueue.open(settings, logger: logger)
        if let lastKnown { try queue.restoreLostCounters(from: lastKnown) }
        let repair = try queue.repair()
        logger.error(
            "The queue file could not be rebuilt; it was moved aside and an empty queue started",
            metadata: [
                "ingest.reason": "\(failure.message)",
                "queue.damaged_copy": "\(queue.quarantinedFile ?? "none")",
                "records.lost": "\(max(0, repair.accountingCorrection))",
            ]
        )
        return queue
    }
}
