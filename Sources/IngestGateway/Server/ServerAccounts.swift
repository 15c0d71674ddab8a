import EdgeIngestCore

/// Who may log in to the HTTP input (docs/PROTOCOL.md, "Identity"):
/// anonymous users if allowed, API keys and email/password users from files
/// that hold only hashes.
///
/// Both files have one account per line, `#` comments and blank lines
/// allowed:
///
/// ```
/// # api_keys_file: name and hash (`ingestd hash-secret --api-key`)
/// gateway-17 sha256$5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8
/// # users_file: email and hash (`ingestd hash-secret`)
/// ops@example.com pbkdf2-sha256$200000$8c1f…$4a9e…
/// ```
package struct ServerAccounts: Sendable {
    package var anonymous = false
    /// API key name → hash (SHA-256: checked on every batch when a key is a
    /// static token, so it must be one lookup, not one hash per key).
    package var apiKeys: [String: SecretHash] = [:] {
        didSet {
            keyNameByDigest = [:]
            for (name, hash) in apiKeys { if case .sha256(let digest) = hash { keyNameByDigest[digest] = name } }
        }
    }
    /// Email (lower case) → hash.
    package var users: [String: SecretHash] = [:] {
        didSet {
            userIDs = Set(users.keys.map(ServerAccounts.userID(email:)))
            unknownUser = SecretHash.unknownUser(costingAsMostOf: users.values)
        }
    }
    /// Checked for an email without an account, at the cost most accounts have.
    private var unknownUser = SecretHash.unknownUser(costingAsMostOf: [])
    private var keyNameByDigest: [[UInt8]: String] = [:]
    private var userIDs: Set<String> = []

    /// No accounts: anyone may write (set ``apiKeys``, ``users`` or ``anonymous``).
    package init() {}

    /// Whether batches need a bearer token at all.
    package var requiresAuthentication: Bool { anonymous || !apiKeys.isEmpty || !users.isEmpty }

    /// Reads an `api_keys_file`: SHA-256 hashes only (a PBKDF2 hash per key
    /// would make every login and every static-token batch cost one PBKDF2
    /// per listed key).
    package static func loadAPIKeys(path: String) throws -> [String: SecretHash] {
        let keys = try load(path: path, what: "API key", validName: isKeyName)
        if let slow = keys.first(where: { !$0.value.isFast }) {
            throw GatewayError(
                .unusableFile,
                "\(path): the key \(quoted(slow.key)) has a password hash; API keys take 'sha256$…' (`ingestd hash-secret --api-key`)."
            )
        }
        return keys
    }

    /// Reads a `users_file`. Emails are compared without case, so two lines
    /// for the same address in different case are refused.
    package static func loadUsers(path: String) throws -> [String: SecretHash] {
        let users = try load(path: path, what: "user", validName: isEmail, normalize: { $0.lowercased() })
        if let fast = users.first(where: { $0.value.isFast }) {
            throw GatewayError(
                .unusableFile,
                "\(path): the user \(quoted(fast.key)) has an unsalted SHA-256 hash; passwords take 'pbkdf2-sha256$…' (`ingestd hash-secret`)."
            )
        }
        return users
    }

    /// Reads an accounts file: `name hash` per line. Errors name the file
    /// and line, never the hash.
    static func load(
        path: String,
        what: String,
        validName: (Substring) -> Bool,
        normalize: (Substring) -> String = { String($0) }
    ) throws -> [String: SecretHash] {
        let text: String
        do {
            text = try readSmallTextFile(path, limit: FileLimits.accounts)
        } catch {
            throw GatewayError(
                .unusableFile,
                "Cannot read the \(what) file \(error): it must be a file the agent can read."
            )
        }
        var out: [String: SecretHash] = [:]
        // isNewline: "\r\n" is one Character, so a file with CRLF line ends splits too.
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let line = raw.trimmingSpaces
            if line.isEmpty || line.hasPrefix("#") { continue }
            let parts = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard parts.count == 2 else {
                throw GatewayError(
                    .unusableFile,
                    "\(path):\(index + 1): expected a name and a hash separated by a space (make the hash with `ingestd hash-secret`)."
                )
            }
            guard validName(parts[0]) else {
                throw GatewayError(
                    .unusableFile,
                    "\(path):\(index + 1): \(quoted(String(parts[0]))) is not a valid \(what) name."
                )
            }
            guard let hash = SecretHash(parts[1]) else {
                throw GatewayError(
                    .unusableFile,
                    "\(path):\(index + 1): the hash is not 'sha256$<64 hex>' or 'pbkdf2-sha256$<iterations>$<salt hex>$<64 hex>' (make it with `ingestd hash-secret`)."
                )
            }
            guard out.updateValue(hash, forKey: normalize(parts[0])) == nil else {
                throw GatewayError(.unusableFile, "\(path):\(index + 1): \(quoted(String(parts[0]))) is listed twice.")
            }
        }
        return out
    }

    /// API key names: letters, digits, '-' and '_' (they become user ids).
    static func isKeyName(_ name: Substring) -> Bool {
        !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy {
                HTTPHeadParser.isTokenByte($0) && $0 != UInt8(ascii: ".") && $0 != UInt8(ascii: "$")
            }
    }

    static func isEmail(_ name: Substring) -> Bool {
        name.contains("@") && name.utf8.count <= 254 && !name.contains(" ")
    }

    /// The API key whose hash matches `key`, if any: one SHA-256 and one lookup.
    func apiKeyName(for key: String) -> String? {
        keyNameByDigest[Secrets.sha256(Array(key.utf8))]
    }

    /// The user id of the email account whose password is `password`, if any.
    /// An unknown email costs the same PBKDF2 as most known ones (the most
    /// common iteration count of the users_file), so the time of a refusal
    /// does not tell which emails have accounts.
    func userID(email: String, password: String) -> String? {
        guard let hash = users[email.lowercased()] else {
            _ = unknownUser.verify(password)
            return nil
        }
        return hash.verify(password) ? ServerAccounts.userID(email: email) : nil
    }

    /// The stable user id of an email account (the same on every login).
    static func userID(email: String) -> String {
        "user-" + Secrets.hex(Array(Secrets.sha256(Array(email.lowercased().utf8)).prefix(12)))
    }

    /// Whether the user id still names an account (keys and users removed
    /// from the files lose their tokens at the next restart).
    func exists(userID: String) -> Bool {
        if userID.hasPrefix("anon-") { return anonymous }
        if userID.hasPrefix("key-") { return apiKeys[String(userID.dropFirst(4))] != nil }
        if userID.hasPrefix("user-") { return userIDs.contains(userID) }
        return false
    }
}

/// A stored secret's hash: SHA-256 for random API keys (cheap enough to
/// check on every batch when a key is used as a static bearer token), or
/// PBKDF2-HMAC-SHA-256 for passwords.
package enum SecretHash: Sendable, Hashable {
    case sha256([UInt8])
    case pbkdf2(iterations: Int, salt: [UInt8], hash: [UInt8])

    init?(_ text: Substring) {
        let parts = text.split(separator: "$", omittingEmptySubsequences: false)
        switch parts.first {
        case "sha256":
            guard parts.count == 2, let hash = Secrets.bytes(hex: parts[1]), hash.count == 32 else { return nil }
            self = .sha256(hash)
        case "pbkdf2-sha256":
            guard parts.count == 4, let n = Int(parts[1]), n >= 1_000, n <= 10_000_000,
                let salt = Secrets.bytes(hex: parts[2]), salt.count >= 8,
                let hash = Secrets.bytes(hex: parts[3]), hash.count == 32
            else { return nil }
            self = .pbkdf2(iterations: n, salt: salt, hash: hash)
        default:
            return nil
        }
    }

    /// Hashes a new secret: PBKDF2 with a random salt, or SHA-256 for API keys.
    static func make(_ secret: String, fast: Bool, iterations: Int = SecretHash.defaultIterations) -> SecretHash {
        if fast { return .sha256(Secrets.sha256(Array(secret.utf8))) }
        let salt = Secrets.randomBytes(16)
        return .pbkdf2(
            iterations: iterations,
            salt: salt,
            hash: Secrets.pbkdf2SHA256(password: Array(secret.utf8), salt: salt, iterations: iterations)
        )
    }

    var text: String {
        switch self {
        case .sha256(let hash): "sha256$" + Secrets.hex(hash)
        case .pbkdf2(let n, let salt, let hash): "pbkdf2-sha256$\(n)$\(Secrets.hex(salt))$\(Secrets.hex(hash))"
        }
    }

    func verify(_ secret: String) -> Bool {
        switch self {
        case .sha256(let hash):
            return Secrets.equalInConstantTime(Secrets.sha256(Array(secret.utf8)), hash)
        case .pbkdf2(let n, let salt, let hash):
            return Secrets.equalInConstantTime(
                Secrets.pbkdf2SHA256(password: Array(secret.utf8), salt: salt, iterations: n),
                hash
            )
        }
    }

    var isFast: Bool { if case .sha256 = self { true } else { false } }

    /// PBKDF2 iterations of a new password hash.
    static let defaultIterations = 200_000
    /// A hash matching nothing, checked for an email without an account:
    /// as many iterations as most of `hashes` have (the default if none).
    static func unknownUser(costingAsMostOf hashes: some Collection<SecretHash>) -> SecretHash {
        var counts: [Int: Int] = [:]
        for case .pbkdf2(let n, _, _) in hashes { counts[n, default: 0] += 1 }
        let iterations = counts.max { ($0.value, -$0.key) < ($1.value, -$1.key) }?.key ?? defaultIterations
        return .pbkdf2(
            iterations: iterations,
            salt: [UInt8](repeating: 0, count: 16),
            hash: [UInt8](repeating: 0, count: 32)
        )
    }
}

/// The hash of a secret as an HTTP input's account files hold it
/// (`ingestd hash-secret`): SHA-256 for an API key (`fast`: checked on every
/// batch when used as a static token, so the key itself must be long and
/// random), PBKDF2-HMAC-SHA-256 with a random salt for a password.
package func accountFileHash(of secret: String, apiKey: Bool) -> String {
    SecretHash.make(secret, fast: apiKey).text
}
