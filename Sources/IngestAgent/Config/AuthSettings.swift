import EdgeIngestCore

/// The `[auth]` section: log in to the backend instead of sending a static
/// token (docs/PROTOCOL.md, "Identity"). Secrets come from files or systemd
/// credentials, never from the configuration itself.
package struct AuthSettings: Sendable {
    /// The backend application's id.
    package var appID: String
    /// Login is `<base_url>/auth/v1/apps/<app_id>/login`.
    package var baseURL: String
    /// Who the agent logs in as.
    package var credentials: Credentials

    package init(appID: String, baseURL: String, credentials: Credentials) {
        self.appID = appID
        self.baseURL = baseURL
        self.credentials = credentials
    }
}

/// The `[client_reset]` section: what the agent does when the backend
/// demands a client reset (docs/PROTOCOL.md, "Client reset").
package struct ClientResetSettings: Sendable {
    /// `recover` (the default), `discard`, `recover_or_discard` or `manual`.
    package var mode = "recover"
    /// Where `discard` writes its backup of the discarded records (one queue
    /// file per reset). The default is `<state_directory>/client-reset-backups`.
    package var backupDirectory: String?

    package init() {}

    static let modes = ["recover", "discard", "recover_or_discard", "manual"]
}

extension ConfigurationDecoder {
    static let authKeys: Set<String> = ["app_id", "base_url", "provider", "api_key_file", "email", "password_file"]
    static let clientResetKeys: Set<String> = ["mode", "backup_directory"]

    mutating func decodeAuth(_ t: TOMLTable?, environment: [String: String]) -> AuthSettings? {
        guard let t else { return nil }
        rejectUnknown(t, known: Self.authKeys, prefix: "auth.")
        let appID = string(t["app_id"], "auth.app_id")
        let baseURL = string(t["base_url"], "auth.base_url")
        if appID == nil { problem(nil, "auth.app_id", "is required in [auth]: the backend application's id") }
        if baseURL == nil {
            problem(
                nil,
                "auth.base_url",
                "is required in [auth]: the backend's base URL, e.g. \"https://backend.example\""
            )
        }
        if let baseURL, !(baseURL.hasPrefix("http://") || baseURL.hasPrefix("https://")) {
            problem(
                t["base_url"],
                "auth.base_url",
                "must start with http:// or https://, got \"\(redactedURL(baseURL).prefix(40))\""
            )
        }
        let provider = string(t["provider"], "auth.provider") ?? "api-key"
        var credentials: Credentials?
        switch provider {
        case "anonymous":
            credentials = .anonymous
        case "api-key":
            if let key = secret(t["api_key_file"], "auth.api_key_file", credential: "api-key", environment: environment)
            {
                credentials = .apiKey(key)
            }
        case "email-password":
            guard let email = string(t["email"], "auth.email") else {
                problem(nil, "auth.email", "is required with provider = \"email-password\"")
                return nil
            }
            if let password = secret(
                t["password_file"],
                "auth.password_file",
                credential: "password",
                environment: environment
            ) {
                credentials = .emailPassword(email: email, password: password)
            }
        default:
            notOneOf(
                t["provider"],
                "auth.provider",
                provider,
                "must be anonymous, api-key or email-password",
                choices: ["anonymous", "api-key", "email-password"]
            )
        }
        guard let appID, let baseURL, let credentials else { return nil }
        return AuthSettings(appID: appID, baseURL: baseURL, credentials: credentials)
    }

    mutating func decodeClientReset(_ t: TOMLTable?) -> ClientResetSettings {
        var settings = ClientResetSettings()
        guard let t else { return settings }
        rejectUnknown(t, known: Self.clientResetKeys, prefix: "client_reset.")
        if let v = t["mode"], let mode = string(v, "client_reset.mode") {
            if ClientResetSettings.modes.contains(mode) {
                settings.mode = mode
            } else {
                let modes = ClientResetSettings.modes
                notOneOf(
                    v,
                    "client_reset.mode",
                    mode,
                    "must be one of \(modes.joined(separator: ", "))",
                    choices: modes
                )
            }
        }
        settings.backupDirectory = string(t["backup_directory"], "client_reset.backup_directory")
        return settings
    }
}

#if canImport(Glibc)
import Glibc
#endif
