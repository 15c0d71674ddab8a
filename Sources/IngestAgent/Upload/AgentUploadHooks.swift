import EdgeIngestCore
import Logging

/// The agent's side of the uploader: its login (when `[auth]` is set), its
/// upload session, and its client-reset mode.
///
/// Unlike an app, the agent holds its credentials: when the backend
/// refuses a refresh, it logs in again by itself. A login that cannot reach
/// the backend is retried with the uploader's backoff; one the backend
/// refuses waits (`waiting_for_user`) until the hold passes or the
/// credentials file is fixed and the agent restarted.
struct AgentUploadHooks {
    let configuration: AgentConfiguration
    let queue: DurableQueue
    let logger: Logger

    /// The app handle, if the agent logs in.
    func makeApp() throws -> App? {
        guard let auth = configuration.auth, let upload = configuration.upload else { return nil }
        var appConfiguration = AppConfiguration(
            baseURL: auth.baseURL,
            metadataDirectory: configuration.identityDirectory
        )
        var http = upload.http
        http.bearerToken = nil
        http.headers = [:]
        appConfiguration.http = http
        return try App(id: auth.appID, configuration: appConfiguration)
    }

    func make(app: App?) throws -> UploadHooks {
        let resetConfiguration = clientResetConfiguration(user: app?.currentUser)
        let resets = try ClientResetHandler(queue: queue, configuration: resetConfiguration, logger: logger)
        let credentials = configuration.auth?.credentials
        var hooks = UploadHooks()
        hooks.requestHeaders = { [app, resets] in
            var headers = [("EdgeIngest-Session", resets.session)]
            if let app, let credentials {
                headers.append(
                    (
                        "Authorization",
                        "Bearer "
                            + (try AgentUploadHooks.accessToken(app: app, credentials: credentials, forceRefresh: false))
                    )
                )
            }
            return headers
        }
        hooks.refreshCredentials = { [app] in
            guard let app, let credentials else { return false }
            return (try? AgentUploadHooks.accessToken(app: app, credentials: credentials, forceRefresh: true)) != nil
        }
        hooks.clientReset = { [resets] reason, recoverable, stored in
            resets.handle(reason: reason, recoverable: recoverable, storedSinceLastReset: stored)
        }
        return hooks
    }

    /// A valid access token: the cached user's (refreshed when due), or a
    /// new login with the configured credentials.
    static func accessToken(app: App, credentials: Credentials, forceRefresh: Bool) throws -> String {
        if let user = app.currentUser, user.state == .loggedIn {
            do {
                return try user.accessToken(forceRefresh: forceRefresh)
            } catch let error as EdgeIngestError where error.code == .authenticationFailed {
                // The session is over; the agent has the credentials: log in again below.
            }
        }
        return try app.loginBlocking(credentials: credentials).accessToken()
    }

    /// The client-reset mode of `[client_reset]`; `discard` writes its
    /// backup into the backup directory.
    func clientResetConfiguration(user: User?) -> IngestConfiguration {
        var configuration = IngestConfiguration()
        configuration.recordTypes = self.configuration.types
        configuration.schemaVersion = self.configuration.queue.schemaVersion
        configuration.user = user
        let types = self.configuration.types
        let key = self.configuration.queue.encryptionKey
        let directory = self.configuration.clientResetBackupDirectory
        let logger = self.logger
        let backup: @Sendable (IngestRealm) -> Void = { before in
            var target = IngestConfiguration()
            target.filePath = directory + "/client-reset-\(isoNow()).ingest.sqlite"
            target.recordTypes = types
            target.maxBytes = nil
            target.encryptionKey = key  // the backup is as protected as the queue
            do {
                let copied = try before.writeCopy(configuration: target)
                logger.warning(
                    "Client reset: wrote a backup of the discarded records",
                    metadata: ["ingest.backup": "\(target.filePath!)", "ingest.records": "\(copied)"]
                )
            } catch {
                logger.error(
                    "Client reset: the backup of the discarded records failed",
                    metadata: ["error": "\(error)"]
                )
            }
        }
        switch self.configuration.clientReset.mode {
        case "discard": configuration.clientResetMode = .discardUnsyncedChanges(backup, nil)
        case "recover_or_discard": configuration.clientResetMode = .recoverOrDiscardUnsyncedChanges(backup, nil)
        case "manual": configuration.clientResetMode = .manual()
        default: configuration.clientResetMode = .recoverUnsyncedChanges()
        }
        return configuration
    }
}
