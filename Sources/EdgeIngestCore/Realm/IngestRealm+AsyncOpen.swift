import Logging

extension IngestRealm {
    /// Opens a realm step by step, reporting each state: the seeds'
    /// `@AsyncOpen`, for code without SwiftUI (and what `ingestd status`
    /// shows as `open_state`).
    ///
    /// ```swift
    /// for await state in IngestRealm.asyncOpen(configuration: configuration, openBehavior: .always) {
    ///     switch state {
    ///     case .connecting: print("connecting…")
    ///     case .waitingForUser: showLogin()           // resumes once someone logs in
    ///     case .progress(let fraction): print(fraction)
    ///     case .open(let realm): use(realm)
    ///     case .error(let error): print(error.message)
    ///     }
    /// }
    /// ```
    ///
    /// What is reported, in order:
    /// - `.waitingForUser`, once, when the backend is needed (``OpenBehavior/always``,
    ///   or the first ``OpenBehavior/once``) and the configuration's user is
    ///   logged out or waits for a new login; checked again every 250 ms.
    /// - `.connecting` when the backend is needed, before reaching it.
    /// - `.progress(fraction)` when the backend is needed and records were
    ///   queued at open: the write-only counterpart of Realm's download
    ///   before open is the **upload** of what was queued. `0.0` first,
    ///   then the fraction of those records confirmed by the backend as it
    ///   grows (checked every 50 ms), `1.0` last.
    /// - `.open` with the realm, or `.error` (for example
    ///   ``EdgeIngestError/Code/offline`` when the backend cannot be reached,
    ///   or the queued records are not all uploaded, within `timeout`).
    ///
    /// With ``OpenBehavior/never`` the sequence is `.open` or `.error` alone.
    /// The sequence ends after `.open` or `.error`.
    public static func asyncOpen(
        configuration: IngestConfiguration = .defaultConfiguration,
        openBehavior: OpenBehavior = .never,
        timeout: Duration = .seconds(30),
        logger: Logger = Logger(label: "edgeingest")
    ) -> AsyncStream<AsyncOpenState> {
        AsyncStream { continuation in
            let task = Task {
                // A local realm never needs the backend; `.once` only until the file was opened online.
                let behavior = configuration.user == nil ? .never : openBehavior
                var needsBackend = behavior != .never
                // Kept open until the realm opens it again: one open of the file, not two.
                var peeked: DurableQueue?
                if behavior == .once {
                    peeked = try? DurableQueue.open(configuration.queueConfiguration(), logger: logger)
                    if let peeked, (try? peeked.meta("opened_online")) != nil { needsBackend = false }
                }
                var steps = AsyncOpenSteps(needsBackend: needsBackend)
                while true {
                    switch steps.next(userState: configuration.user?.state) {
                    case .finish:
                        continuation.finish()
                        return
                    case .emit(let state):
                        continuation.yield(state)
                    case .pollUser:
                        try? await Task.sleep(for: .milliseconds(250))
                        if Task.isCancelled {
                            continuation.finish()
                            return
                        }
                    case .open:
                        steps.opened()
                        defer { peeked = nil }
                        let start = ContinuousClock.now
                        do {
                            let realm = try await IngestRealm(
                                configuration: configuration,
                                openBehavior: behavior,
                                timeout: timeout,
                                logger: logger
                            )
                            if steps.needsBackend {
                                try await realm.uploadQueued(until: start + timeout) {
                                    continuation.yield(.progress($0))
                                }
                            }
                            continuation.yield(.open(realm))
                        } catch let error as EdgeIngestError {
                            continuation.yield(.error(error))
                        } catch is CancellationError {
                        } catch {
                            continuation.yield(.error(EdgeIngestError(.storage, "Opening failed: \(error).")))
                        }
                    }
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Waits until the records queued now are confirmed by the backend
    /// (the upload before open of ``asyncOpen(configuration:openBehavior:timeout:logger:)``),
    /// reporting the fraction done: 0 first, 1 last, nothing when none
    /// were queued.
    func uploadQueued(until deadline: ContinuousClock.Instant, progress: (Double) -> Void) async throws {
        let first = try queue.statistics()
        guard first.queuedRecords > 0 else { return }
        progress(0)
        var reported = 0.0
        while true {
            let now = try queue.statistics()
            let (fraction, done) = Self.uploadProgress(from: first, to: now)
            if fraction > reported {
                reported = fraction
                progress(fraction)
            }
            if done { return }
            guard ContinuousClock.now < deadline else {
                let reason = uploadState?.reason.map { " (\($0))" } ?? ""
                throw EdgeIngestError(
                    .offline,
                    "\(now.queuedRecords) of the \(first.queuedRecords) records queued at open were not uploaded in time\(reason); open with .never to open offline."
                )
            }
            upload?.wake.wake()
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}

extension IngestRealm {
    /// How far the upload of the records queued at `first` got by `now`:
    /// records confirmed, or gone another accounted way (dead letters,
    /// drops), over those queued at first; records written meanwhile do not
    /// move the goal. Done when as many left as were queued, or none is left.
    static func uploadProgress(from first: QueueStatistics, to now: QueueStatistics) -> (fraction: Double, done: Bool) {
        let gone = now.leftTotal - first.leftTotal
        let done = now.queuedRecords == 0 || gone >= first.queuedRecords
        guard !done, first.queuedRecords > 0 else { return (1, true) }
        return (min(1, max(0, Double(gone) / Double(first.queuedRecords))), false)
    }
}

extension QueueStatistics {
    /// Records that ever left the queue: confirmed, dead-lettered, quarantined or dropped.
    fileprivate var leftTotal: Int64 { acknowledgedTotal + deadLetterRecords + quarantinedRecords + droppedTotal }
}

/// The order of ``IngestRealm/asyncOpen(configuration:openBehavior:timeout:)``'s
/// states, as a pure state machine (tested without a backend).
struct AsyncOpenSteps {
    enum Action {
        case emit(AsyncOpenState)
        case pollUser
        case open
        case finish
    }

    private enum Phase { case start, waiting, reported, done }
    private var phase = Phase.start
    let needsBackend: Bool

    init(needsBackend: Bool) { self.needsBackend = needsBackend }

    mutating func next(userState: User.State?) -> Action {
        switch phase {
        case .start, .waiting:
            if let userState, userState != .loggedIn, needsBackend {
                if phase == .start {
                    phase = .waiting
                    return .emit(.waitingForUser)
                }
                return .pollUser
            }
            phase = .reported
            return needsBackend ? .emit(.connecting) : .open
        case .reported:
            return .open  // the caller calls opened(), then reports the outcome
        case .done:
            return .finish
        }
    }

    mutating func opened() { phase = .done }
}
