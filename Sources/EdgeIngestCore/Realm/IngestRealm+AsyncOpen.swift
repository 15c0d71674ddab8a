import Synchronization

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
    /// The sequence ends after `.open` or `.error`. While the configuration's
    /// user is logged out or waits for a new login, it reports
    /// `.waitingForUser` once and checks again every 250 ms.
    public static func asyncOpen(
        configuration: IngestConfiguration = .defaultConfiguration,
        openBehavior: OpenBehavior = .never,
        timeout: Duration = .seconds(30)
    ) -> AsyncStream<AsyncOpenState> {
        // The unfolding closure is called once at a time; the lock only makes that visible to the compiler.
        let steps = Mutex(AsyncOpenSteps(needsBackend: openBehavior != .never && configuration.user != nil))
        return AsyncStream(unfolding: {
            while true {
                let userState = configuration.user?.state
                switch steps.withLock({ $0.next(userState: userState) }) {
                case .finish:
                    return nil
                case .emit(let state):
                    return state
                case .pollUser:
                    try? await Task.sleep(for: .milliseconds(250))
                    if Task.isCancelled { return nil }
                case .open:
                    do {
                        let realm = try await IngestRealm(
                            configuration: configuration,
                            openBehavior: openBehavior,
                            timeout: timeout
                        )
                        steps.withLock { $0.opened() }
                        return .open(realm)
                    } catch let error as EdgeIngestError {
                        steps.withLock { $0.opened() }
                        return .error(error)
                    } catch {
                        steps.withLock { $0.opened() }
                        return .error(EdgeIngestError(.storage, "Opening failed: \(error)."))
                    }
                }
            }
        })
    }
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
            return needsBackend ? .emit(.connecting) : .emit(.progress(0))
        case .reported:
            return .open  // the caller reports the outcome and calls opened()
        case .done:
            return .finish
        }
    }

    mutating func opened() { phase = .done }
}
