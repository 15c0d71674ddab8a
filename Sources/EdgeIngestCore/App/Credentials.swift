/// How a user proves who they are to the backend: the seeds' `Credentials`.
///
/// ```swift
/// let user = try await app.login(credentials: .anonymous)
/// let gateway = try await app.login(credentials: .apiKey(keyFromFile))
/// let alice = try await app.login(credentials: .emailPassword(email: "alice@example.com", password: password))
/// ```
///
/// Printing credentials never shows a key or a password.
public struct Credentials: Sendable, CustomStringConvertible {
    enum Kind: Sendable {
        case anonymous
        case apiKey(String)
        case emailPassword(email: String, password: String)
    }
    let kind: Kind

    /// A new anonymous user (a device identity with no account).
    public static let anonymous = Credentials(kind: .anonymous)

    /// A server API key, as issued for a gateway or a fleet of devices.
    public static func apiKey(_ key: String) -> Credentials { Credentials(kind: .apiKey(key)) }

    /// An email/password account.
    public static func emailPassword(email: String, password: String) -> Credentials {
        Credentials(kind: .emailPassword(email: email, password: password))
    }

    /// The provider name used in the protocol and in `ingestd status`:
    /// `anonymous`, `api-key` or `email-password`.
    public var provider: String {
        switch kind {
        case .anonymous: return "anonymous"
        case .apiKey: return "api-key"
        case .emailPassword: return "email-password"
        }
    }

    /// The login request body (docs/PROTOCOL.md, "Identity").
    var loginBody: [UInt8] {
        var out = Array(#"{"provider":"#.utf8)
        JSONWriter.appendString(provider, to: &out)
        switch kind {
        case .anonymous:
            break
        case .apiKey(let key):
            out += Array(#","key":"#.utf8)
            JSONWriter.appendString(key, to: &out)
        case .emailPassword(let email, let password):
            out += Array(#","email":"#.utf8)
            JSONWriter.appendString(email, to: &out)
            out += Array(#","password":"#.utf8)
            JSONWriter.appendString(password, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    public var description: String {
        switch kind {
        case .anonymous: return "anonymous credentials"
        case .apiKey: return "API key credentials (key hidden)"
        case .emailPassword(let email, _): return "email/password credentials for \(email) (password hidden)"
        }
    }
}
