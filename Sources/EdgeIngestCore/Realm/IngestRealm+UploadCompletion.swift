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
    ///   ``EdgeIngestError/Code/invalidConfiguration`` for a local realm;
    ///   `CancellationError` when the task is cancelled. In every case the
    ///   records stay queued and upload later.
    public func waitForUpload(timeout: Duration? = .seconds(30)) async throws {
        guard let upload, let user = configuration.user else {
            throw EdgeIngestError(
                .invalidConfiguration,
                "This realm has no user, so it never uploads: open it with user.configuration()."
            )
        }
        let mark = try queue.newestSegmentNumber()
        let clock = ContinuousClock()
        let deadline = timeout.map { clock.now + $0 }
        while case let waiting = try queue.pending(upTo: mark).records, waiting > 0 {
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
            try await Task.sleep(for: .milliseconds(20))
        }
    }

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
