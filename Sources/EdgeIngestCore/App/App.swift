/// A handle on one backend application: logs users in, caches their
/// credentials beside the queues so they are there offline, and refreshes
/// their tokens. The seeds' `App`.
///
/// ```swift
/// let app = App(id: "weather-fleet", configuration: AppConfiguration(
///     baseURL: "https://ingest.example.com", metadataDirectory: "/var/lib/myapp/edgeingest"))
/// // Offline after the first login: the cached user is there.
/// let user = try await app.currentUser ?? app.login(credentials: .anonymous)
/// ```
///
/// One `App` per id and metadata directory in a process; it is `Sendable`.
public final class App: Sendable {
    /// The backend application's id.
    public let id: String
    /// Where the backend is and where users are cached.
    public let configuration: AppConfiguration

    let client: AuthClient
    let store: CredentialStore
    private let state: PlainMutex<State>
    /// Held while the cache is written: each save writes the newest
    /// contents, one at a time (a login racing a token refresh must neither
    /// interleave two writes nor let an older snapshot land last).
    private let saving = PlainMutex(())

    struct State {
        var contents: CredentialStore.Contents
        var handles: [String: User] = [:]
        var resumers: [UInt64: (userID: String, resume: @Sendable () -> Void)] = [:]
        var nextResumer: UInt64 = 0
    }

    /// Creates the app handle and reads the credential cache.
    ///
    /// - Throws: ``EdgeIngestError/Code/invalidConfiguration`` for an empty id
    ///   or a base URL that is not http(s), ``EdgeIngestError/Code/storage``
    ///   if the cache exists but cannot be read.
    public init(id: String, configuration: AppConfiguration) throws {
        guard !id.isEmpty, id.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." }) else {
            throw EdgeIngestError(
                .invalidConfiguration,
                "The app id '\(id)' is empty or has characters other than letters, digits, '-', '_' and '.'."
            )
        }
        guard configuration.baseURL.hasPrefix("http://") || configuration.baseURL.hasPrefix("https://") else {
            throw EdgeIngestError(
                .invalidConfiguration,
                "The backend base URL '\(configuration.baseURL)' must start with http:// or https://."
            )
        }
        self.id = id
        self.configuration = configuration
        self.client = AuthClient(appID: id, configuration: configuration)
        self.store = CredentialStore(directory: configuration.metadataDirectory)
        self.state = PlainMutex(State(contents: try store.load()))
    }

    /// The URL batches are posted to: `<baseURL>/ingest/v1/apps/<id>/batches`.
    public var ingestURL: String { configuration.baseURL + "/ingest/v1/apps/" + id + "/batches" }

    /// Logs in online and caches the user's credentials (replacing an
    /// earlier login of the same user). The user becomes ``currentUser``;
    /// uploads waiting for this user resume.
    ///
    /// - Throws: ``EdgeIngestError/Code/offline`` when the backend cannot be
    ///   reached, ``EdgeIngestError/Code/authenticationFailed`` when it
    ///   refuses the credentials.
    public func login(credentials: Credentials) async throws -> User {
        let client = self.client
        let stored = try await BlockingThread.value { try client.login(credentials) }
        return try remember(stored)
    }

    /// ``login(credentials:)`` for a caller on its own thread (the agent's uploader).
    package func loginBlocking(credentials: Credentials) throws -> User {
        try remember(client.login(credentials))
    }

    func remember(_ stored: StoredUser) throws -> User {
        let (user, resumers) = state.withLock { state in
            state.contents.users.removeAll { $0.id == stored.id }
            state.contents.users.append(stored)
            state.contents.currentUserID = stored.id
            let user = handle(for: stored.id, in: &state)
            return (user, state.resumers.values.filter { $0.userID == stored.id }.map(\.resume))
        }
        try persist()
        for resume in resumers { resume() }
        return user
    }

    /// The last user to log in whose credentials are cached, even offline
    /// and across restarts; nil after that user logged out.
    public var currentUser: User? {
        state.withLock { state in
            guard let id = state.contents.currentUserID, state.contents.users.contains(where: { $0.id == id }) else {
                return nil
            }
            return handle(for: id, in: &state)
        }
    }

    /// Every user whose credentials are cached, by id.
    public var allUsers: [String: User] {
        state.withLock { state in
            Dictionary(uniqueKeysWithValues: state.contents.users.map { ($0.id, handle(for: $0.id, in: &state)) })
        }
    }

    private func handle(for id: String, in state: inout State) -> User {
        if let user = state.handles[id] { return user }
        let user = User(id: id, app: self)
        state.handles[id] = user
        return user
    }

    func stored(_ userID: String) -> StoredUser? {
        state.withLock { $0.contents.users.first { $0.id == userID } }
    }

    /// Applies `change` to a cached user and saves the cache.
    func update(_ userID: String, _ change: (inout StoredUser) -> Void) throws {
        let changed = state.withLock { state in
            guard let i = state.contents.users.firstIndex(where: { $0.id == userID }) else { return false }
            change(&state.contents.users[i])
            return true
        }
        if changed { try persist() }
    }

    func forget(_ userID: String) throws {
        state.withLock { state in
            state.contents.users.removeAll { $0.id == userID }
            if state.contents.currentUserID == userID {
                state.contents.currentUserID = state.contents.users.max { $0.loggedInAt < $1.loggedInAt }?.id
            }
        }
        try persist()
    }

    /// Writes the newest cached users; see ``saving``.
    private func persist() throws {
        try saving.withLock { _ in
            try store.save(state.withLock { $0.contents })
        }
    }

    /// Registers a callback run when `userID` logs in again (an uploader
    /// waiting for the user). Returns a token for ``removeResumer(_:)``.
    func addResumer(userID: String, _ resume: @escaping @Sendable () -> Void) -> UInt64 {
        state.withLock { state in
            state.nextResumer += 1
            state.resumers[state.nextResumer] = (userID, resume)
            return state.nextResumer
        }
    }

    func removeResumer(_ token: UInt64) {
        _ = state.withLock { $0.resumers.removeValue(forKey: token) }
    }
}
