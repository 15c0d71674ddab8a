/// Waiting for the upload, and watching it: how a program makes sure its
/// writes left the device before it exits.
extension IngestRealm {
    /// Waits until every record written before the call left the device:
    /// confirmed by the backend, or refused by it and kept as a dead letter
    /// (each such refusal also reaches ``SyncManager/errorHandler``).
    /// Records written while it waits are not waited for. Wakes a batch
    /// that is lingering for more records, so it goes at once. Passing
    /// failures and holds (a 403 or 404, reported to the error handler)
    /// do not end the wait: they may lift; `timeout` bounds it.
    ///
    /// ```swift
    /// try realm.write { try $0.create(WeatherSensor.self, value: reading) }
    /// try await realm.waitForUpload(timeout: .seconds(30))   // before the program exits
    /// ```
    ///
    /// - Parameter timeout: how long to wait; nil waits for as long as it takes.
    /// - Throws: ``EdgeIngestError/Code/offline`` with the count still
    ///   waiting after `timeout`; ``EdgeIngestError/Code/authenticationFailed``
    ///   when the user logged out or must log in again;
    ///   ``EdgeIngestError/Code/uploadHeld`` when a client reset waits for
    ///   the app (``ClientResetMode/manual(errorHandler:)``);
    ///   the error that ended the upload thread;
    ///   ``EdgeIngestError/Code/invalidConfiguration`` for a local realm;
    ///   `CancellationError` when the task is cancelled. In these cases the
    ///   records stay queued and upload later. And, once nothing written
    ///   before the call is queued, ``EdgeIngestError/Code/notUploaded``
    ///   when records left the queue meanwhile without reaching the
    ///   backend (dropped by the overflow policy or a maximum age,
    ///   discarded by a client reset, quarantined as damaged), counted by
    ///   reason.
    public func waitForUpload(timeout: Duration? = .seconds(30)) async throws {
        guard let upload, let user = configuration.user else {
            throw EdgeIngestError(
                .invalidConfiguration,
                "This realm has no user, so it never uploads: open it with user.configuration()."
            )
        }
        let mark = try queue.newestSegmentNumber()
        let before = try queue.statistics()
        let clock = ContinuousClock()
        let started = clock.now
        let deadline = timeout.map { started + $0 }
        while true {
            let waiting = try queue.pending(upTo: mark).records
            // Gone from the queue and, for what was acknowledged, reported.
            if waiting == 0, !upload.activity.isReporting { break }
            try Task.checkCancellation()
            if let reason = try uploadCannotFinish(upload: upload, user: user) {
                throw reason.adding(" \(waiting) records written before the wait are still queued and upload later.")
            }
            if let deadline, clock.now >= deadline {
                let reason = uploadState?.reason.map { " (\($0))" } ?? ""
                throw EdgeIngestError(
                    .offline,
                    "\(waiting) records written before the wait are still queued after \(timeout!)\(reason); they upload later."
                )
            }
            upload.uploader.flush(forMilliseconds: 1_000)
            upload.wake.wake()
            // Quick while batches go, then calmer: a wait through an outage
            // should not keep the queue's lock busy.
            let waited = clock.now - started
            let pause = waited < .seconds(1) ? 20 : waited < .seconds(10) ? 100 : 250
            try await Task.sleep(for: .milliseconds(pause))
        }
        try checkNothingLeftUnsent(since: before)
    }

    /// Throws ``EdgeIngestError/Code/notUploaded`` when records left the
    /// queue without reaching the backend since `before`.
    private func checkNothingLeftUnsent(since before: QueueStatistics) throws {
        let after = try queue.statistics()
        var lost: [(String, Int64)] = []
        for (reason, count) in after.droppedByReason.sorted(by: { $0.key < $1.key }) {
            let grew = count - (before.droppedByReason[reason] ?? 0)
            if grew > 0 { lost.append((reason, grew)) }
        }
        let quarantined = after.quarantinedRecords - before.quarantinedRecords
        if quarantined > 0 { lost.append(("quarantined as damaged", quarantined)) }
        guard !lost.isEmpty else { return }
        let total = lost.reduce(0) { $0 + $1.1 }
        throw EdgeIngestError(
            .notUploaded,
            "While the wait ran, \(total) records left the queue without reaching the backend (\(lost.map { "\($0.0): \($0.1)" }.joined(separator: ", "))); the others were confirmed. statistics() keeps the counts; a client reset's beforeReset block had the discarded ones."
        )
    }

    /// Why the background upload stopped for good (it is also told to
    /// ``SyncManager/errorHandler``), or nil while it runs or for a local
    /// realm. Opening the file again starts a new one.
    public var uploadFailure: EdgeIngestError? { upload?.activity.ended }

    /// Why the upload cannot finish without the app (or an operator), or
    /// nil while it can.
    private func uploadCannotFinish(upload: BackgroundUpload, user: User) throws -> EdgeIngestError? {
        if let ended = upload.activity.ended { return ended }
        switch user.state {
        case .loggedOut:
            return EdgeIngestError(.authenticationFailed, "User \(user.id) logged out: log in again to upload.")
        case .waitingForUser:
            return EdgeIngestError(
                .authenticationFailed,
                "The backend refused to refresh the session of user \(user.id): log in again to upload."
            )
        default: break
        }
        if let reset = pendingClientReset {
            return EdgeIngestError(
                .uploadHeld,
                "A client reset waits for the app (\(reset)): resolve it with resolveClientReset(discard:backup:)."
            )
        }
        return nil
    }

    /// Calls `block` with the upload's progress now and after every batch
    /// the backend confirmed, on the upload's thread (keep it short), until
    /// the token is cancelled or the realm's upload stops; with
    /// ``UploadProgress/Scope/currentlyOutstanding`` until the records
    /// waiting now all left (a last call then reports 1.0).
    ///
    /// ```swift
    /// let token = try realm.observeUploadProgress(.currentlyOutstanding) { progress in
    ///     print("uploaded \(progress.transferredRecords) of \(progress.transferrableRecords)")
    /// }
    /// ```
    ///
    /// - Throws: ``EdgeIngestError/Code/invalidConfiguration`` for a local
    ///   realm; the queue's read errors.
    public func observeUploadProgress(
        _ scope: UploadProgress.Scope,
        _ block: @escaping @Sendable (UploadProgress) -> Void
    ) throws -> UploadProgressToken {
        guard let upload else {
            throw EdgeIngestError(
                .invalidConfiguration,
                "This realm has no user, so it never uploads: open it with user.configuration()."
            )
        }
        return try upload.activity.observe(scope, block)
    }
}

extension EdgeIngestError {
    /// The same error with `text` appended to its message.
    func adding(_ text: String) -> EdgeIngestError {
        EdgeIngestError(
            code,
            message + text,
            cause: cause,
            validationFailure: validationFailure,
            rejectedRecord: rejectedRecord,
            file: location.file,
            line: location.line
        )
    }
}
