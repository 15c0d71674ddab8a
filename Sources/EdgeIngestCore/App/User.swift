/// A logged-in user of an ``App``: the seeds' `User`. Its credentials are
/// cached, so it outlives restarts and works offline until it logs out.
///
/// ```swift
/// let user = try await app.login(credentials: .apiKey(key))
/// var configuration = user.configuration()
/// configuration.objectTypes = [WeatherSensor.self]
/// let realm = try await IngestRealm(configuration: configuration)
/// ```
public final class User: Sendable, CustomStringConvertible {
    /// The backend's id for this user.
    public let id: String
    /// The app the user belongs to.
    public let app: App

    init(id: String, app: App) {
        self.id = id
        self.app = app
    }

    /// What the user can do now.
    public struct State: Hashable, Sendable, CustomStringConvertible {
        enum Kind: String {
            case loggedIn = "logged_in"
            case waitingForUser = "waiting_for_user"
            case loggedOut = "logged_out"
        }
        let kind: Kind
        /// Credentials are cached and (as far as we know) valid.
        public static let loggedIn = State(kind: .loggedIn)
        /// The backend refused to refresh the session: writes still work and
        /// are kept, uploading waits until the user logs in again.
        public static let waitingForUser = State(kind: .waitingForUser)
        /// The user logged out: no credentials are cached.
        public static let loggedOut = State(kind: .loggedOut)
        public var description: String { kind.rawValue }
    }

    /// The user's state, from the credential cache.
    public var state: State {
        guard let stored = app.stored(id) else { return .loggedOut }
        return stored.refreshRefused ? .waitingForUser : .loggedIn
    }

    /// The provider the user logged in with: `anonymous`, `api-key` or `email-password`.
    public var provider: String { app.stored(id)?.provider ?? "" }

    public var description: String { "user \(id) (\(provider), \(state))" }

    /// Refreshes the access token now (online).
    ///
    /// - Throws: ``EdgeIngestError/Code/offline`` if the backend cannot be
    ///   reached; ``EdgeIngestError/Code/authenticationFailed`` if it refused,
    ///   which moves the user to ``State/waitingForUser``.
    public func refresh() async throws {
        try await BlockingThread.value { [self] in _ = try accessToken(forceRefresh: true) }
    }

    /// Logs out: ends the session on the backend if it can be reached and
    /// removes this user's cached credentials. Queued records stay queued.
    public func logOut() async throws {
        if let stored = app.stored(id) {
            let client = app.client
            try await BlockingThread.value { client.logout(refreshToken: stored.refreshToken) }
        }
        try app.forget(id)
    }

    /// A valid access token, refreshed first when it expires within the
    /// app's margin (or when `forceRefresh`). Blocking.
    package func accessToken(forceRefresh: Bool = false, timeoutMilliseconds: Int? = nil) throws -> String {
        guard let stored = app.stored(id) else {
            throw EdgeIngestError(.authenticationFailed, "User \(id) is logged out: log in again to upload.")
        }
        if stored.refreshRefused {
            throw EdgeIngestError(
                .authenticationFailed,
                "The backend refused to refresh the session of user \(id): log in again to upload."
            )
        }
        let now = wallClockMilliseconds()
        // A damaged cache may hold any expiry: no overflow, it just refreshes.
        let (refreshAt, overflow) = stored.accessExpiresAt.subtractingReportingOverflow(
            app.configuration.refreshMarginMilliseconds
        )
        if !forceRefresh, !overflow, refreshAt > now {
            return stored.accessToken
        }
        do {
            var client = app.client
            if let timeoutMilliseconds {
                client.configuration.http.connectTimeoutMilliseconds = min(
                    client.configuration.http.connectTimeoutMilliseconds,
                    timeoutMilliseconds
                )
                client.configuration.http.timeoutMilliseconds = timeoutMilliseconds
            }
            let fresh = try client.refresh(refreshToken: stored.refreshToken)
            try app.update(id) {
                $0.accessToken = fresh.token
                $0.accessExpiresAt = fresh.expiresAt
            }
            return fresh.token
        } catch let error as EdgeIngestError where error.code == .authenticationFailed {
            try app.update(id) { $0.refreshRefused = true }
            throw error
        }
    }
}
