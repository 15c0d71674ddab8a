/// How a gateway stores records it received from another client: with
/// deduplication by `_id` and a check of the client's session.
package struct Receipt: Sendable {
    /// How long received `_id`s are remembered (at least; at most twice
    /// this); 0 turns deduplication off.
    package var dedupWindowMilliseconds: Int64
    /// The client's `EdgeIngest-Session`: its nonce and epoch.
    package var session: (nonce: String, epoch: Int64)?
    /// Leave out of the window the ids this process generated (readings
    /// that came without `_id`): they cannot come again under the same id,
    /// so remembering them would only cost a lookup, an insert and ~25
    /// bytes each (the MQTT input; a gateway's records all carry their own).
    package var skipsIDsGeneratedHere = false
    /// The account (tenant) that sent the records: their `_id`s and its
    /// sessions are remembered per account, so one account can neither
    /// suppress another's records (a pre-claimed `_id` answered as a
    /// duplicate) nor learn which `_id`s another sent. nil: one space for
    /// every sender (a gateway without accounts, the MQTT input).
    package var tenant: String?

    package init(dedupWindowMilliseconds: Int64, session: (nonce: String, epoch: Int64)?, tenant: String? = nil) {
        self.dedupWindowMilliseconds = dedupWindowMilliseconds
        self.session = session
        self.tenant = tenant
    }

    /// The key a session is remembered under: its nonce within the tenant.
    var sessionKey: String? {
        guard let nonce = session?.nonce else { return nil }
        return tenant.map { "\($0)\u{1F}\(nonce)" } ?? nonce
    }
}

/// What ``DurableQueue/receive(_:receipt:counters:)`` did.
package enum ReceiveOutcome: Sendable, Equatable {
    /// Durable: `accepted` stored, `duplicates` already received before.
    case stored(AppendResult)
    /// The queue is at its bound under ``OverflowPolicy/block``: nothing was
    /// stored; the client should try again later.
    case queueFull
    /// The client's session epoch is older than one this queue already saw
    /// from the same client (it was restored from a backup, say): nothing
    /// was stored; the client must reset.
    case staleSession(seenEpoch: Int64)
}

extension DurableQueue {
    /// Stores records received from another client in one transaction,
    /// skipping those whose `_id` was received within the receipt's window,
    /// and never waits for space (a full queue is an answer, not a pause).
    /// The records' ids, the session and `counters` commit together with
    /// them, so a crash leaves either all of it or none. Batches that other
    /// threads receive at the same time share the transaction (a group
    /// commit, ``CommitGroups``): one commit and one fsync for all.
    ///
    /// - Throws: ``EdgeIngestError`` as ``append(_:positions:counters:onWaitForSpace:)``
    ///   (``EdgeIngestError/Code/queueFull`` when the batch can never fit).
    package func receive(
        _ records: [Record],
        receipt: Receipt,
        counters: [String: Int64] = [:]
    ) throws -> ReceiveOutcome {
        try receive(
            EncodedBatch(records: records, types: typesByName, queueName: configuration.location.description),
            receipt: receipt,
            counters: counters
        )
    }

    /// Stores records received from another client, already encoded (the
    /// gateway's decoder stores lines as read): as ``receive(_:receipt:counters:)-([Record],_,_)``.
    ///
    /// - Throws: ``EdgeIngestError`` as that one, and when the batch holds
    ///   records of a type this queue does not declare.
    package func receive(
        _ batch: EncodedBatch,
        receipt: Receipt,
        counters: [String: Int64] = [:]
    ) throws -> ReceiveOutcome {
        try batch.check(against: typesByName, queueName: configuration.location.description)
        let request = AppendRequest(
            batch: batch,
            sizes: batch.recordSizes,
            positions: [],
            counters: counters,
            receipt: receipt
        )
        do {
            // With the batches other threads are storing now: one commit for all.
            switch try receiveGroups.run(request, commit: appendNow) {
            case .done(let result): return .stored(result)
            case .wait: return .queueFull
            }
        } catch let stale as StaleSession {
            return .staleSession(seenEpoch: stale.seenEpoch)
        }
    }
}
