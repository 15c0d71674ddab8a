/// A record created with an `_id` the realm already holds is refused at
/// write time, like a primary-key violation: the backend would refuse it
/// (`duplicate_id`) and it would end as a dead letter nobody asked for.
extension IngestRealm {
    /// The ids a write claimed in the queue's window of recent `_id`s, to
    /// give back if the write is not stored.
    struct ClaimedIDs {
        let recent: RecentIDs
        let records: [Record]

        func forget() {
            for record in records { recent.forget(typeName: record.type.name, id: record.id) }
        }
    }

    /// Claims the `_id` of every record of one write, all or none.
    ///
    /// - Throws: ``EdgeIngestError/Code/duplicateID`` naming the first
    ///   record whose `_id` is already queued, was written recently
    ///   (within the queue's window of ``DurableQueue/recentIDGeneration``
    ///   later records), or repeats one earlier in the same write.
    func claimIDs(of records: [Record]) throws -> ClaimedIDs {
        let recent = try queue.recentIDs()
        var claimed: [Record] = []
        claimed.reserveCapacity(records.count)
        for record in records {
            guard recent.claim(typeName: record.type.name, id: record.id) else {
                ClaimedIDs(recent: recent, records: claimed).forget()
                throw EdgeIngestError(
                    .duplicateID,
                    "A \(record.type.name) with _id \(record.id) is already in this realm (queued, written recently or earlier in this write): each record needs its own _id, as a primary key; nothing of this write was stored.",
                    rejectedRecord: RejectedRecord(id: record.id, type: record.type.name, reason: "duplicate_id")
                )
            }
            claimed.append(record)
        }
        return ClaimedIDs(recent: recent, records: claimed)
    }
}
