import Logging

/// What a realm's background upload did, for the app: confirmed bytes and
/// records, progress observers, per-record refusals (each reported to
/// ``SyncManager/errorHandler``), and whether the upload thread ended.
/// The uploader calls ``acknowledged(_:deadLetters:)`` after each lease.
final class UploadActivity: Sendable {
    private let queue: DurableQueue
    private let user: User?
    private let logger: Logger

    private struct Observer {
        let scope: UploadProgress.Scope
        let block: @Sendable (UploadProgress) -> Void
        /// `.currentlyOutstanding`: the newest segment then and its waiting
        /// records and bytes; `.indefinitely`: the confirmed totals then.
        let mark: Int64
        let startRecords: Int64
        let startBytes: Int64
    }

    private struct State {
        var confirmedRecords: Int64 = 0
        var confirmedBytes: Int64 = 0
        var observers: [UInt64: Observer] = [:]
        var nextObserver: UInt64 = 0
        /// Why the upload thread ended, once it has.
        var ended: EdgeIngestError?
    }

    private let state = PlainMutex(State())

    init(queue: DurableQueue, user: User?, logger: Logger) {
        self.queue = queue
        self.user = user
        self.logger = logger
    }

    /// Why the upload thread ended, or nil while it runs.
    var ended: EdgeIngestError? { state.withLock { $0.ended } }

    /// The upload thread stopped on `error`: waits for upload end with it.
    func end(_ error: any Error) {
        let reason =
            (error as? EdgeIngestError)
            ?? EdgeIngestError(.storage, "The background upload stopped: \(error).")
        state.withLock { $0.ended = reason }
    }

    /// After a lease was acknowledged: counts it, tells the observers and
    /// reports each record that became a dead letter.
    func acknowledged(_ lease: QueueLease, deadLetters: [Int: String]) {
        state.withLock {
            $0.confirmedRecords += Int64(lease.recordCount)
            $0.confirmedBytes += lease.storedByteCount
        }
        if !deadLetters.isEmpty { report(deadLetters, of: lease) }
        notifyObservers()
    }

    private func report(_ deadLetters: [Int: String], of lease: QueueLease) {
        let numbers = (try? queue.deadLetterNumbers(of: deadLetters.keys.map { lease.recordIDs[$0] })) ?? [:]
        for (index, reason) in deadLetters.sorted(by: { $0.key < $1.key }) {
            let id = lease.recordIDs[index]
            let record = RejectedRecord(
                id: id,
                type: lease.segment(containing: index).type,
                reason: reason,
                deadLetterNumber: numbers[id]
            )
            let error = EdgeIngestError(
                .recordRejected,
                "The backend refused \(record.type) \(id) (\(reason)); it is kept as dead letter \(record.deadLetterNumber.map { "#\($0)" } ?? "(number unknown)"): list, replay or discard it with the realm's dead-letter methods.",
                rejectedRecord: record
            )
            logger.warning(
                "The backend refused a record; it is kept as a dead letter",
                metadata: ["ingest.type": "\(record.type)", "ingest.id": "\(id)", "ingest.reason": "\(reason)"]
            )
            SyncManager.errorHandler?(error, user)
        }
    }

    /// Adds an observer and tells it where things stand now.
    func observe(
        _ scope: UploadProgress.Scope,
        _ block: @escaping @Sendable (UploadProgress) -> Void
    ) throws -> UploadProgressToken {
        let observer: Observer
        switch scope {
        case .currentlyOutstanding:
            let mark = try queue.newestSegmentNumber()
            let waiting = try queue.pending(upTo: mark)
            observer = Observer(
                scope: scope,
                block: block,
                mark: mark,
                startRecords: waiting.records,
                startBytes: waiting.bytes
            )
        case .indefinitely:
            let confirmed = state.withLock { ($0.confirmedRecords, $0.confirmedBytes) }
            observer = Observer(
                scope: scope,
                block: block,
                mark: 0,
                startRecords: confirmed.0,
                startBytes: confirmed.1
            )
        }
        let number = state.withLock { state in
            state.nextObserver += 1
            state.observers[state.nextObserver] = observer
            return state.nextObserver
        }
        notify(number, observer)
        return UploadProgressToken { [weak self] in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: number) }
        }
    }

    private func notifyObservers() {
        let observers = state.withLock { $0.observers }
        for (number, observer) in observers.sorted(by: { $0.key < $1.key }) { notify(number, observer) }
    }

    /// Calls one observer with its progress now (outside the lock); an
    /// outstanding-work observer whose records all left is removed after
    /// its last call.
    private func notify(_ number: UInt64, _ observer: Observer) {
        let progress: UploadProgress
        switch observer.scope {
        case .currentlyOutstanding:
            guard let waiting = try? queue.pending(upTo: observer.mark) else { return }
            progress = UploadProgress(
                transferredBytes: observer.startBytes - waiting.bytes,
                transferrableBytes: observer.startBytes,
                transferredRecords: observer.startRecords - waiting.records,
                transferrableRecords: observer.startRecords
            )
            if waiting.records == 0 {
                // Removed first: a call racing with this one never repeats the final report.
                guard state.withLock({ $0.observers.removeValue(forKey: number) }) != nil else { return }
            }
        case .indefinitely:
            guard let statistics = try? queue.statistics() else { return }
            let confirmed = state.withLock { ($0.confirmedRecords, $0.confirmedBytes) }
            let records = confirmed.0 - observer.startRecords
            let bytes = confirmed.1 - observer.startBytes
            progress = UploadProgress(
                transferredBytes: bytes,
                transferrableBytes: bytes + statistics.queuedBytes,
                transferredRecords: records,
                transferrableRecords: records + statistics.queuedRecords
            )
        }
        observer.block(progress)
    }
}
