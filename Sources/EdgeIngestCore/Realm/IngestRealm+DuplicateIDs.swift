/// A record created with an `_id` the realm already holds is refused at
/// write time, like a primary-key violation: the backend would refuse it
/// (`duplicate_id`) and it would end as a dead letter nobody asked for.
extension IngestRealm {
    /// The ids a write claimed in the queue's window of recent `_id`s, to
    /// give back if the write is not stored.
    struct ClaimedIDs {
        let recent: RecentIDs
        let entries: [(typeName: String, id: ObjectId)]

        func forget() { recent.forget(entries) }
    }

    /// Claims the `_id` of every record of one write, all or none, under
    /// one lock (two writes at once cannot both fail on each other's ids).
    ///
    /// - Throws: ``EdgeIngestError/Code/duplicateID`` naming the first
    ///   record whose `_id` is already queued among the queue's last
    ///   ``DurableQueue/recentIDGeneration`` records, was written recently
    ///   (within that many later records), or repeats one earlier in the
    ///   same write.
    func claimIDs(of records: [Record]) throws -> ClaimedIDs {
        let recent = try queue.recentIDs()
        let entries = records.map { (typeName: $0.type.name, id: $0.id) }
        if let index = recent.claimAll(entries) {
            let record = records[index]
            throw EdgeIngestError(
                .duplicateID,
                "A \(record.type.name) with _id \(record.id) is already in this realm (queued, written recently or earlier in this write): each record needs its own _id, as a primary key; nothing of this write was stored.",
                rejectedRecord: RejectedRecord(id: record.id, type: record.type.name, reason: "duplicate_id")
            )
        }
        return ClaimedIDs(recent: recent, entries: entries)
    }
}
