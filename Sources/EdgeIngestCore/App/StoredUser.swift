/// A user's cached identity and tokens, as kept in the credential store.
struct StoredUser: Codable, Sendable, Equatable {
    var id: String
    var provider: String
    var accessToken: String
    /// When the access token expires, in ms since the epoch.
    var accessExpiresAt: Int64
    var refreshToken: String
    /// When this user last logged in, in ms since the epoch.
    var loggedInAt: Int64
    /// True once the backend refused to refresh the tokens: the user must
    /// log in again before uploading resumes (writes still work).
    var refreshRefused: Bool = false
}
