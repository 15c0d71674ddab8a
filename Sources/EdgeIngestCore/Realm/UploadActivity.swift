#if canImport(Glibc)
import Glibc
#endif

/// What a realm's background upload did, for the app: confirmed bytes and
/// records, progress observers, per-record refusals (each reported to
/// ``SyncManager/errorHandler``), and whether the upload thread ended.
/// The uploader runs each acknowledgement through
/// ``acknowledge(_:deadLetters:commit:)``, so that a wait which sees the
/// records gone also knows the app was told of them.
final class UploadActivity: Sendable {
    private let queue: DurableQueue
    private let user: User?

    private struct Observer: Sendable {
        let scope: UploadProgress.Scope
        let block: @Sendable (UploadProgress) -> Void
        /// `.currentlyOutstanding`: the newest segment then and its waiting
        /// records and bytes; `.indefinitely`: the confirmed totals then.
        let mark: Int64
        let startRecords: Int64
        let startBytes: Int64
        /// Held while the block runs: one call at a time, in order.
        let calling = PlainLock()
        /// The thread running the block now, if any: a cancel() from inside
        /// the block must not wait for itself.
        let caller = PlainMutex<pthread_t?>(nil)
    }

    private struct State {
        var confirmedRecords: Int64 = 0
        var confirmedBytes: Int64 = 0
        var observers: [UInt64: Observer] = [:]
        var nextObserver: UInt64 = 0
        /// Acknowledgements committed or committing whose reports are not
        /// all made yet.
        var underway = 0
        /// Why the upload thread ended, once it has.
        var ended: EdgeIngestError?
    }

    private let state = PlainMutex(State())

    init(queue: DurableQueue, user: User?) {
        self.queue = queue
        self.user = user
    }

    /// Why the upload thread ended, or nil while it runs.
    var ended: EdgeIngestError? { state.withLock { $0.ended } }

    /// Whether an acknowledgement is being committed or reported now.
    var isReporting: Bool { state.withLock { $0.underway > 0 } }

    /// The upload thread stopped on `error`: waits end with it, the error
    /// handler hears of it, observers are dropped.
    func end(_ error: any Error) {
        let reason =
            (error as? EdgeIngestError)
            ?? EdgeIngestError(.storage, "The background upload stopped: \(error).")
        let stopped = EdgeIngestError(
            reason.code,
            "The background upload stopped and nothing more uploads until the realm is opened again: \(reason.message)",
            cause: reason.cause
        )
        state.withLock {
            $0.ended = stopped
            $0.observers = [:]
        }
        SyncManager.errorHandler?(stopped, user)
    }

    /// Commits one acknowledgement, then counts it, tells the observers
    /// and reports each record that became a dead letter, before a wait
    /// may see the records gone.
    func acknowledge(_ lease: QueueLease, deadLetters: [Int: String], commit: () throws -> Void) throws {
        state.withLock { $0.underway += 1 }
        defer { state.withLock { $0.underway -= 1 } }
        try commit()
        state.withLock {
            $0.confirmedRecords += Int64(lease.recordCount)
            $0.confirmedBytes += lease.storedByteCount
        }
        if !deadLetters.isEmpty { report(deadLetters, of: lease) }
        notifyObservers()
    }

    /// One `record_rejected` error per dead letter, to the error handler
    /// (the uploader has logged them, within its budget).
    private func report(_ deadLetters: [Int: String], of lease: QueueLease) {
        guard let handler = SyncManager.errorHandler else { return }
        let numbers = (try? queue.newestDeadLetterNumbers(count: deadLetters.count)) ?? [:]
        for (index, reason) in deadLetters.sorted(by: { $0.key < $1.key }) {
            let id = lease.recordIDs[index]
            let record = RejectedRecord(
                id: id,
                type: lease.segment(containing: index).type,
                reason: reason,
                deadLetterNumber: numbers[id]
            )
            let kept = record.deadLetterNumber.map { "dead letter #\($0)" } ?? "a dead letter"
            handler(
                EdgeIngestError(
                    .recordRejected,
                    "The backend refused \(record.type) \(id) (\(reason)); it is kept as \(kept): list, export, replay or discard it with the realm's dead-letter methods.",
                    rejectedRecord: record
                ),
                user
            )
        }
    }

    /// Adds an observer and tells it where things stand now.
    ///
    /// - Throws: why the upload ended, once it has: nothing would be reported.
    func observe(
        _ scope: UploadProgress.Scope,
        _ block: @escaping @Sendable (UploadProgress) -> Void
    ) throws -> UploadProgressToken {
        if let ended { throw ended }
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
            let fromTheBlock = observer.caller.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
            // From another thread, waits for a call in progress: none comes after cancel() returns.
            if !fromTheBlock { observer.calling.lock() }
            _ = self?.state.withLock { $0.observers.removeValue(forKey: number) }
            if !fromTheBlock { observer.calling.unlock() }
        }
    }

    private func notifyObservers() {
        let observers = state.withLock { $0.observers }
        for (number, observer) in observers.sorted(by: { $0.key < $1.key }) { notify(number, observer) }
    }

    /// Calls one observer with its progress now, if it is still registered;
    /// an outstanding-work observer whose records all left is removed with
    /// its last call.
    private func notify(_ number: UInt64, _ observer: Observer) {
        observer.calling.lock()
        defer { observer.calling.unlock() }
        guard state.withLock({ $0.observers[number] != nil }) else { return }
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
            if waiting.records == 0 { state.withLock { _ = $0.observers.removeValue(forKey: number) } }
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
        observer.caller.withLock { $0 = pthread_self() }
        observer.block(progress)
        observer.caller.withLock { $0 = nil }
    }
}
