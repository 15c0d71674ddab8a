import EdgeIngestCore

extension AgentStatus {
    /// The queue's numbers as the status file at `statusPath` last
    /// recorded them (nil without a readable one): what `repair` and `run`
    /// put back when a damaged queue file lost its own counters, so the
    /// readings it held are counted as dropped (damaged) rather than gone
    /// without a trace.
    package static func lastKnownQueueNumbers(statusPath: String) -> QueueStatistics? {
        guard let text = try? readSmallTextFile(statusPath, limit: FileLimits.small),
            let status = try? AgentStatus.decode(text)
        else { return nil }
        var numbers = QueueStatistics.empty
        numbers.queuedRecords = status.queuedRecords
        numbers.appendedTotal = status.acceptedTotal
        numbers.acknowledgedTotal = status.uploadedTotal
        numbers.deadLetterRecords = status.deadLetterRecords
        numbers.quarantinedRecords = status.quarantinedRecords ?? 0
        numbers.droppedByReason = status.droppedByReason
        return numbers
    }
}
