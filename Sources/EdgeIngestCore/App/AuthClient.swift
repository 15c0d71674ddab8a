/// The login, refresh and logout exchange (docs/PROTOCOL.md, "Identity"),
/// blocking, over libcurl. One short-lived handle per call: logins are rare.
struct AuthClient: Sendable {
    let appID: String
    var configuration: AppConfiguration

    private func url(_ action: String) -> String {
        configuration.baseURL + "/auth/v1/apps/" + appID + "/" + action
    }

    func login(_ credentials: Credentials) throws -> StoredUser {
        let response = try post("login", body: credentials.loginBody, bearer: nil, doing: "log in")
        guard response.status == 200 else {
            throw refused(
                response,
                "The backend refused the \(credentials.provider) credentials",
                fix: "Check the key, email or password."
            )
        }
        let answer = try? JSONValue.parse(response.body)
        guard let userID = answer?["user_id"]?.string, let accessToken = answer?["access_token"]?.string,
            let refreshToken = answer?["refresh_token"]?.string, let expiresIn = answer?["expires_in"]?.int64
        else {
            throw EdgeIngestError(
                .authenticationFailed,
                "The backend's login answer is not the JSON docs/PROTOCOL.md describes (user_id, access_token, refresh_token, expires_in)."
            )
        }
        let now = wallClockMilliseconds()
        return StoredUser(
            id: userID,
            provider: credentials.provider,
            accessToken: accessToken,
            accessExpiresAt: now + Self.milliseconds(expiresIn),
            refreshToken: refreshToken,
            loggedInAt: now
        )
    }

    /// A new access token and its expiry (ms since the epoch).
    func refresh(refreshToken: String) throws -> (token: String, expiresAt: Int64) {
        let response = try post("refresh", body: [], bearer: refreshToken, doing: "refresh the access token")
        guard response.status == 200 else {
            throw refused(response, "The backend refused to refresh the session", fix: "Log in again.")
        }
        let answer = try? JSONValue.parse(response.body)
        guard let accessToken = answer?["access_token"]?.string, let expiresIn = answer?["expires_in"]?.int64 else {
            throw EdgeIngestError(
                .authenticationFailed,
                "The backend's refresh answer is not the JSON docs/PROTOCOL.md describes (access_token, expires_in)."
            )
        }
        return (accessToken, wallClockMilliseconds() + Self.milliseconds(expiresIn))
    }

    /// A token lifetime in ms; a negative or absurd `expires_in` (more
    /// than ten years) is taken as 0 or ten years rather than overflowing.
    static func milliseconds(_ expiresIn: Int64) -> Int64 {
        min(max(expiresIn, 0), 10 * 366 * 86_400) * 1000
    }

    /// Tells the backend to end the session; failures are ignored (the
    /// local credentials are removed either way).
    func logout(refreshToken: String) {
        _ = try? post("logout", body: [], bearer: refreshToken, doing: "log out")
    }

    private func post(_ action: String, body: [UInt8], bearer: String?, doing: String) throws -> HTTPResponse {
        var settings = configuration.http
        settings.url = url(action)
        settings.gzip = false
        settings.bearerToken = bearer
        let transport = try CurlTransport(settings: settings, userAgent: "EdgeIngest/\(EdgeIngestVersion.current)")
        do {
            return try transport.post(body[...], headers: [("Content-Type", "application/json")])
        } catch let error as TransportError {
            throw EdgeIngestError(.offline, "Cannot reach the backend to \(doing): \(error.message)", cause: error)
        }
    }

    private func refused(_ response: HTTPResponse, _ what: String, fix: String) -> EdgeIngestError {
        switch response.status {
        case 401, 403:
            return EdgeIngestError(.authenticationFailed, "\(what) (HTTP \(response.status)). \(fix)")
        case 500..<600:
            return EdgeIngestError(.offline, "\(what): the backend failed (HTTP \(response.status)). Try again later.")
        default:
            return EdgeIngestError(.authenticationFailed, "\(what) (HTTP \(response.status)).")
        }
    }
}
