import EdgeIngest
import Foundation

/// Realm's `App`: logs users in and caches them. There is no Atlas: say
/// where the backend (an ingestd gateway, docs/MIGRATING-FROM-REALM.md) is
/// with `configuration`, or with the `EDGEINGEST_BASE_URL` environment
/// variable for `App(id:)`.
///
/// ```swift
/// let app = App(id: APPID, configuration: AppConfiguration(baseURL: "https://ingest.example.com"))
/// let user = try await app.login(credentials: .anonymous)
/// ```
///
/// Apps with the same id, backend, metadata directory and HTTP settings are
/// one: an `App(id:)` made again elsewhere in the program sees the same users.
/// As in Realm, making one does not fail; a problem (an invalid id, no
/// backend, an unreadable credential cache) is thrown by ``login(credentials:)``.
public final class App: Sendable {
    /// The backend application's id.
    public let appId: String
    private let made: Result<EdgeIngestCore.App, EdgeIngestError>

    /// The app `id` at the backend `configuration` names; without one, at
    /// `EDGEINGEST_BASE_URL`, with users cached under
    /// `<IngestConfiguration.defaultDirectory>/apps/<id>`.
    public init(id: String, configuration: AppConfiguration? = nil) {
        appId = id
        made = Result { try App.shared(id: id, configuration: configuration) }
            .mapError { $0 as? EdgeIngestError ?? EdgeIngestError(.invalidConfiguration, "\($0)") }
    }

    private static let registry = PlainMutex<[String: EdgeIngestCore.App]>([:])

    private static func shared(id: String, configuration: AppConfiguration?) throws -> EdgeIngestCore.App {
        guard var configuration = configuration ?? AppConfiguration(environmentFor: id) else {
            throw EdgeIngestError(
                .invalidConfiguration,
                "App '\(id)' has no backend: use App(id:configuration: AppConfiguration(baseURL: \"https://…\")) or set EDGEINGEST_BASE_URL."
            )
        }
        if configuration.metadataDirectory == AppConfiguration.defaultAppsDirectory {
            configuration.metadataDirectory += "/" + id  // each app its own users
        }
        // Every setting is part of the key: an App made with other TLS files,
        // proxy or timeouts is another App, not the first one's.
        let http = configuration.http
        let key = [
            id, configuration.baseURL, configuration.metadataDirectory, http.caFile ?? "", http.caPath ?? "",
            http.clientCertificate ?? "", http.clientKey ?? "", http.proxy ?? "", "\(http.connectTimeoutMilliseconds)",
            "\(http.timeoutMilliseconds)", "\(configuration.refreshMarginMilliseconds)",
            http.headers.sorted { $0.key < $1.key }.map { $0.key + ":" + $0.value }.joined(separator: ","),
        ].joined(separator: "\n")
        return try registry.withLock { apps in
            if let app = apps[key] { return app }
            let app = try EdgeIngestCore.App(id: id, configuration: configuration)
            apps[key] = app
            return app
        }
    }

    /// The app of the primary API this one maps onto.
    public func ingestApp() throws -> EdgeIngestCore.App { try reportingRealmErrors { try made.get() } }

    /// Logs in online and caches the user's credentials; see
    /// ``EdgeIngestCore/App/login(credentials:)``.
    public func login(credentials: Credentials) async throws -> User {
        try await reportingRealmErrorsAsync { try await made.get().login(credentials: credentials) }
    }

    /// The last user to log in whose credentials are cached (offline too),
    /// or nil.
    public var currentUser: User? { try? made.get().currentUser }

    /// Every user whose credentials are cached, by id.
    public var allUsers: [String: User] { (try? made.get().allUsers) ?? [:] }

    /// Where upload errors go: Realm's `app.syncManager`.
    public var syncManager: SyncManager { SyncManager() }
}

extension AppConfiguration {
    /// The backend at `baseURL` (an ingestd gateway's `http://host:port`),
    /// with users cached under `<IngestConfiguration.defaultDirectory>/apps/<app id>`.
    /// Realm's other arguments (a transport, timeouts) have no counterpart:
    /// set ``http`` for TLS files, proxies and timeouts.
    public init(baseURL: String) {
        self.init(baseURL: baseURL, metadataDirectory: Self.defaultAppsDirectory)
    }

    /// `<IngestConfiguration.defaultDirectory>/apps`; an ``App`` adds its id.
    static var defaultAppsDirectory: String { IngestConfiguration.defaultDirectory + "/apps" }

    /// `EDGEINGEST_BASE_URL`'s backend, or nil when it is not set.
    init?(environmentFor id: String) {
        guard let base = ProcessInfo.processInfo.environment["EDGEINGEST_BASE_URL"], !base.isEmpty else { return nil }
        self.init(baseURL: base)
    }
}
