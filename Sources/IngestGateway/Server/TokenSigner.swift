import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// Issues and checks the HTTP input's access and refresh tokens. A token
/// is `<kind>.<user id>.<expiry>.<HMAC-SHA-256 hex>`, signed with a key
/// kept in the state directory (`server-token-key`, 32 random bytes, mode
/// 0600), so tokens stay valid across restarts and no token table is kept.
/// Logging out cannot revoke a refresh token before it expires; removing
/// the account from its file (and restarting) does.
package struct TokenSigner: Sendable {
    enum Kind: String, Sendable {
        case access = "a"
        case refresh = "r"
    }

    static let accessSeconds: Int64 = 1800
    static let refreshSeconds: Int64 = 30 * 24 * 3600
    private let key: [UInt8]

    init(key: [UInt8]) {
        self.key = key
    }

    /// Loads the key from `path`, creating it on first use.
    package static func loadOrCreate(path: String) throws -> TokenSigner {
        if let existing = try? readSmallFile(path, limit: 32), existing.count == 32 {
            return TokenSigner(key: existing)
        }
        let key = Secrets.randomBytes(32)
        do {
            try writeFileAtomically(path, key, durable: true)
        } catch {
            throw GatewayError(.unusableFile, "Cannot create the token key '\(path)': \(error.reason).")
        }
        return TokenSigner(key: key)
    }

    func issue(_ kind: Kind, userID: String, now: Int64) -> String {
        let expiry = now + (kind == .access ? TokenSigner.accessSeconds : TokenSigner.refreshSeconds)
        let claims = "\(kind.rawValue).\(userID).\(expiry)"
        return claims + "." + Secrets.hex(Secrets.hmacSHA256(key: key, Array(claims.utf8)))
    }

    /// The user id of a valid, unexpired token of `kind`, or nil.
    func verify(_ token: String, kind: Kind, now: Int64) -> String? {
        guard token.utf8.count < 512 else { return nil }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == kind.rawValue, let expiry = Int64(parts[2]), expiry > now,
            let mac = Secrets.bytes(hex: parts[3])
        else { return nil }
        let claims = "\(parts[0]).\(parts[1]).\(parts[2])"
        guard Secrets.equalInConstantTime(Secrets.hmacSHA256(key: key, Array(claims.utf8)), mac) else { return nil }
        return String(parts[1])
    }
}
