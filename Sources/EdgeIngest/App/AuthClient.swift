import FoundationEssentials

/// The login, refresh and logout exchange (docs/PROTOCOL.md, "Identity"),
/// blocking, over libcurl. One short-lived handle per call: logins are rare.
struct AuthClient: Sendable {
    let appID: String
    var configuration: AppConfiguration

    private func url(_ action: String) -> String {
        configuration.baseURL + "/auth/v1/apps/" + appID + "/" + action
    }

    private struct LoginAnswer: Decodable {
        var user_id: String
        var access_token: String
        var refresh_token: String
        var expires_in: Int64
    }

    private struct RefreshAnswer: Decodable {
        var access_token: String
        var expires_in: Int64
    }

    func login(_ credentials: Credentials) throws -> StoredUser {
        let response = try post("login", body: credentials.loginBody, bearer: nil, doing: "log in")
        guard response.status == 200 else {
            throw refused(response, "The backend refused the \(credentials.provider) credentials", fix: "Check the key, email or password.")
        }
        guard let answer = try? JSONDecoder().decode(LoginAnswer.self, from: Data(response.body)) else {
            throw EdgeIngestError(.authenticationFailed, "The backend's login answer is not the JSON docs/PROTOCOL.md describes (user_id, access_token, refresh_token, expires_in).")
        }
        let now = wallClockMilliseconds()
        return StoredUser(
            id: answer.user_id, provider: credentials.provider, accessToken: answer.access_token,
            accessExpiresAt: now + answer.expires_in * 1000, refreshToken: answer.refresh_token, loggedInAt: now
        )
    }

    /// A new access token and its expiry (ms since the epoch).
    func refresh(refreshToken: String) throws -> (token: String, expiresAt: Int64) {
        let response = try post("refresh", body: [], bearer: refreshToken, doing: "refresh the access token")
        guard response.status == 200 else {
            throw refused(response, "The backend refused to refresh the session", fix: "Log in again.")
        }
        guard let answer = try? JSONDecoder().decode(RefreshAnswer.self, from: Data(response.body)) else {
            throw EdgeIngestError(.authenticationFailed, "The backend's refresh answer is not the JSON docs/PROTOCOL.md describes (access_token, expires_in).")
        }
        return (answer.access_token, wallClockMilliseconds() + answer.expires_in * 1000)
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
