import EdgeIngest
import Foundation
import TestSupport
import Testing

@testable import IngestGateway

/// SHA-256("password"), as the example in ServerAccounts.swift.
private let passwordSHA256 = "5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8"
/// PBKDF2-HMAC-SHA-256("password", salt "saltSALTsalt", 1000 iterations, 32 bytes),
/// computed independently with Python's hashlib.pbkdf2_hmac.
private let passwordPBKDF2 =
    "pbkdf2-sha256$1000$73616c7453414c5473616c74$dc4dadbb885c66e8b059dbc0864bb72eb33a31607bb4cadaa2d5b7732ed78146"

private func bytes(_ hex: String) -> [UInt8] { Secrets.bytes(hex: Substring(hex))! }

private func accountsFile(_ dir: TemporaryDirectory, _ text: String, name: String = "accounts") throws -> String {
    let path = dir.file(name)
    try text.write(toFile: path, atomically: false, encoding: .utf8)
    return path
}

private func loadError(
    path: String,
    what: String = "api key",
    validName: (Substring) -> Bool = ServerAccounts.isKeyName
) -> String? {
    do {
        _ = try ServerAccounts.load(path: path, what: what, validName: validName)
        return nil
    } catch let error as GatewayError {
        return error.message
    } catch {
        return "unexpected error \(error)"
    }
}

/// Proves that account files load as `name hash` lines (comments, blank
/// lines, tabs and extra spaces allowed), that every mistake is refused
/// with the file, the line and what to do (never quoting the hash), and
/// that names, emails, user ids and account lookups follow the rules the
/// HTTP input relies on.
@Suite struct ServerAccountsTests {
    @Test func aFileLoadsSkippingCommentsAndBlankLines() throws {
        let dir = try TemporaryDirectory()
        let path = try accountsFile(
            dir,
            """
            # api_keys_file
            gateway-17 sha256$\(passwordSHA256)

              \t
            \tgw_2 \t \(passwordPBKDF2)   
              # indented comment
            """
        )
        let keys = try ServerAccounts.load(path: path, what: "api key", validName: ServerAccounts.isKeyName)
        let pbkdf2 = try #require(SecretHash(Substring(passwordPBKDF2)))
        #expect(keys == ["gateway-17": .sha256(bytes(passwordSHA256)), "gw_2": pbkdf2])
        #expect(keys["gateway-17"]?.verify("password") == true)
        #expect(keys["gw_2"]?.verify("password") == true)
    }

    @Test func anAPIKeysFileTakesSHA256HashesOnly() throws {
        let dir = try TemporaryDirectory()
        let fast = try accountsFile(dir, "gateway-17 sha256$\(passwordSHA256)\n", name: "fast")
        #expect(try ServerAccounts.loadAPIKeys(path: fast) == ["gateway-17": .sha256(bytes(passwordSHA256))])
        let slow = try accountsFile(dir, "gateway-17 sha256$\(passwordSHA256)\ngw_2 \(passwordPBKDF2)\n", name: "slow")
        #expect(throws: GatewayError.self) { try ServerAccounts.loadAPIKeys(path: slow) }
    }

    @Test func aUsersFileComparesEmailsWithoutCase() throws {
        let dir = try TemporaryDirectory()
        let path = try accountsFile(dir, "Ops@Example.com \(passwordPBKDF2)\n", name: "users")
        var accounts = ServerAccounts()
        accounts.users = try ServerAccounts.loadUsers(path: path)
        #expect(
            accounts.userID(email: "ops@EXAMPLE.com", password: "password")
                == ServerAccounts.userID(email: "ops@example.com")
        )
        #expect(accounts.userID(email: "ops@example.com", password: "wrong") == nil)
        #expect(accounts.exists(userID: ServerAccounts.userID(email: "OPS@example.com")))
        let twice = try accountsFile(
            dir,
            "ops@example.com \(passwordPBKDF2)\nOPS@example.com \(passwordPBKDF2)\n",
            name: "twice"
        )
        #expect(throws: GatewayError.self) { try ServerAccounts.loadUsers(path: twice) }
    }

    @Test func aUsersFileTakesSaltedPasswordHashesOnly() throws {
        let dir = try TemporaryDirectory()
        let fast = try accountsFile(
            dir,
            "ops@example.com \(passwordPBKDF2)\nbot@example.com sha256$\(passwordSHA256)\n",
            name: "fast-user"
        )
        #expect(throws: GatewayError.self) { try ServerAccounts.loadUsers(path: fast) }
    }

    @Test func anEmptyFileHasNoAccounts() throws {
        let dir = try TemporaryDirectory()
        #expect(
            try ServerAccounts.load(
                path: try accountsFile(dir, ""),
                what: "api key",
                validName: ServerAccounts.isKeyName
            ).isEmpty
        )
        #expect(
            try ServerAccounts.load(
                path: try accountsFile(dir, "# none yet\n\n", name: "b"),
                what: "user",
                validName: ServerAccounts.isEmail
            ).isEmpty
        )
    }

    @Test func aUsersFileTakesEmails() throws {
        let dir = try TemporaryDirectory()
        let path = try accountsFile(dir, "ops@example.com \(passwordPBKDF2)\n")
        let users = try ServerAccounts.load(path: path, what: "user", validName: ServerAccounts.isEmail)
        #expect(users.keys.sorted() == ["ops@example.com"])
        #expect(users["ops@example.com"]?.verify("password") == true)
    }

    /// A file saved with Windows line ends: each CRLF must end a line like LF.
    @Test func aFileWithCRLFLineEndsLoads() throws {
        let dir = try TemporaryDirectory()
        let path = try accountsFile(dir, "# keys\r\ngw-1 sha256$\(passwordSHA256)\r\ngw-2 sha256$\(passwordSHA256)\r\n")
        let error = loadError(path: path)
        #expect(error == nil)
        let keys = try? ServerAccounts.load(path: path, what: "api key", validName: ServerAccounts.isKeyName)
        #expect(keys?.keys.sorted() == ["gw-1", "gw-2"])
    }

    @Test(arguments: [
        ("gateway-17\n", 1),
        ("# c\n\ngateway-17 sha256$\(passwordSHA256) extra\n", 3),
        ("gateway-17 sha256$\(passwordSHA256)\ngateway-18\n", 2),
    ])
    func aLineWithoutExactlyANameAndAHashNamesFileAndLine(text: String, line: Int) throws {
        let dir = try TemporaryDirectory()
        let path = try accountsFile(dir, text)
        #expect(
            loadError(path: path)
                == "\(path):\(line): expected a name and a hash separated by a space (make the hash with `ingestd hash-secret`)."
        )
    }

    @Test func anInvalidNameIsQuoted() throws {
        let dir = try TemporaryDirectory()
        let path = try accountsFile(dir, "ok-1 sha256$\(passwordSHA256)\n# c\nbad.name sha256$\(passwordSHA256)\n")
        #expect(loadError(path: path) == "\(path):3: \"bad.name\" is not a valid api key name.")
        let users = try accountsFile(dir, "ops.example.com \(passwordPBKDF2)\n", name: "users")
        #expect(
            loadError(path: users, what: "user", validName: ServerAccounts.isEmail)
                == "\(users):1: \"ops.example.com\" is not a valid user name."
        )
    }

    @Test func aBadHashNamesTheLineButNeverQuotesTheHash() throws {
        let dir = try TemporaryDirectory()
        let secretish = "sha256$0123456789abcdef0123456789abcdef"  // 16 bytes, not 32
        let path = try accountsFile(dir, "gw sha256$\(passwordSHA256)\ngw2 \(secretish)\n")
        let error = try #require(loadError(path: path))
        #expect(
            error
                == "\(path):2: the hash is not 'sha256$<64 hex>' or 'pbkdf2-sha256$<iterations>$<salt hex>$<64 hex>' (make it with `ingestd hash-secret`)."
        )
        #expect(!error.contains("0123456789abcdef"))
    }

    @Test func aNameListedTwiceIsRefusedAtItsSecondLine() throws {
        let dir = try TemporaryDirectory()
        let path = try accountsFile(dir, "gw sha256$\(passwordSHA256)\nother \(passwordPBKDF2)\ngw \(passwordPBKDF2)\n")
        #expect(loadError(path: path) == "\(path):3: \"gw\" is listed twice.")
    }

    /// Account files are read bounded, and only when regular: a FIFO does
    /// not block the gateway's start, /dev/zero does not fill its memory.
    @Test func aSpecialFileIsRefusedWithoutReadingIt() throws {
        let dir = try TemporaryDirectory()
        let fifo = dir.file("keys.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        for path in [fifo, "/dev/zero"] {
            let error = try #require(loadError(path: path))
            #expect(error.contains("not a regular file"), "\(error)")
        }
    }

    @Test func aMissingFileSaysWhichAndWhatToDo() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("absent")
        let error = try #require(loadError(path: path))
        #expect(error.hasPrefix("Cannot read the api key file "))
        #expect(error.hasSuffix(": it must be a file the agent can read."))
        // The whole path: an operator must see which file (they are often longer than 32 characters).
        #expect(error.contains(path), "\(error)")
    }

    @Test(arguments: [
        ("gateway-17", true), ("GW_2", true), ("a", true), (String(repeating: "k", count: 64), true),
        ("", false), (String(repeating: "k", count: 65), false), ("a.b", false), ("a$b", false), ("a b", false),
        ("a/b", false), ("a:b", false), ("caf\u{e9}", false),
    ])
    func keyNamesAreShortTokensWithoutDotOrDollar(name: String, valid: Bool) {
        #expect(ServerAccounts.isKeyName(Substring(name)) == valid)
    }

    @Test(arguments: [
        ("ops@example.com", true), ("a@b", true), ("ops.example.com", false), ("a b@c", false),
        (String(repeating: "a", count: 250) + "@b.c", true), (String(repeating: "a", count: 251) + "@b.c", false),
    ])
    func emailsHaveAnAtNoSpaceAndAtMost254Bytes(name: String, valid: Bool) {
        #expect(ServerAccounts.isEmail(Substring(name)) == valid)
    }

    @Test func anAPIKeyIsFoundByItsSecret() {
        var accounts = ServerAccounts()
        accounts.apiKeys = ["gw-1": .make("first-key", fast: true), "gw-2": .make("second-key", fast: true)]
        #expect(accounts.apiKeyName(for: "second-key") == "gw-2")
        #expect(accounts.apiKeyName(for: "first-key") == "gw-1")
        #expect(accounts.apiKeyName(for: "third-key") == nil)
        #expect(accounts.apiKeyName(for: "") == nil)
    }

    @Test func aUserIDIsStableAndIgnoresTheEmailsCase() {
        // "user-" and the first 12 bytes of SHA-256("ops@example.com") (Python's hashlib).
        #expect(ServerAccounts.userID(email: "ops@example.com") == "user-af3c82544f648b38dc7d4034")
        #expect(ServerAccounts.userID(email: "OPS@Example.COM") == "user-af3c82544f648b38dc7d4034")
        #expect(ServerAccounts.userID(email: "dev@example.com") != "user-af3c82544f648b38dc7d4034")
    }

    @Test func onlyUserIDsOfListedAccountsExist() {
        var accounts = ServerAccounts()
        accounts.apiKeys = ["gw-1": .make("k", fast: true)]
        accounts.users = ["ops@example.com": .make("k", fast: true)]
        #expect(accounts.exists(userID: "key-gw-1"))
        #expect(!accounts.exists(userID: "key-gw-2"))
        #expect(accounts.exists(userID: ServerAccounts.userID(email: "ops@example.com")))
        #expect(!accounts.exists(userID: ServerAccounts.userID(email: "dev@example.com")))
        #expect(!accounts.exists(userID: "anon-0011223344556677"))
        #expect(!accounts.exists(userID: "gw-1"))
        #expect(!accounts.exists(userID: ""))
        accounts.anonymous = true
        #expect(accounts.exists(userID: "anon-0011223344556677"))
    }

    @Test func authenticationIsRequiredOnceAnyLoginIsConfigured() {
        var accounts = ServerAccounts()
        #expect(!accounts.requiresAuthentication)
        accounts.anonymous = true
        #expect(accounts.requiresAuthentication)
        accounts = ServerAccounts()
        accounts.apiKeys = ["gw": .make("k", fast: true)]
        #expect(accounts.requiresAuthentication)
        accounts = ServerAccounts()
        accounts.users = ["a@b": .make("k", fast: true)]
        #expect(accounts.requiresAuthentication)
    }
}

/// Proves that `SecretHash` parses exactly the two documented forms (and
/// refuses weak or malformed parameters), prints them back, makes new
/// hashes (SHA-256 for API keys, salted PBKDF2 for passwords) and verifies
/// secrets against known vectors computed outside this code.
@Suite struct SecretHashTests {
    @Test func sha256FormParses() throws {
        let hash = try #require(SecretHash(Substring("sha256$" + passwordSHA256)))
        #expect(hash == .sha256(bytes(passwordSHA256)))
        #expect(hash.isFast)
        #expect(hash.text == "sha256$" + passwordSHA256)
        #expect(hash.verify("password"))
        #expect(!hash.verify("Password"))
        #expect(!hash.verify(""))
    }

    @Test func upperCaseHexParsesAndPrintsLowerCase() throws {
        let hash = try #require(SecretHash(Substring("sha256$" + passwordSHA256.uppercased())))
        #expect(hash.text == "sha256$" + passwordSHA256)
        #expect(hash.verify("password"))
    }

    @Test func pbkdf2FormParsesAndVerifiesAKnownVector() throws {
        let hash = try #require(SecretHash(Substring(passwordPBKDF2)))
        #expect(
            hash
                == .pbkdf2(
                    iterations: 1000,
                    salt: Array("saltSALTsalt".utf8),
                    hash: bytes("dc4dadbb885c66e8b059dbc0864bb72eb33a31607bb4cadaa2d5b7732ed78146")
                )
        )
        #expect(!hash.isFast)
        #expect(hash.text == passwordPBKDF2)
        #expect(hash.verify("password"))
        #expect(!hash.verify("password "))
        #expect(!hash.verify("Password"))
    }

    @Test(arguments: [
        "",
        "sha256",
        "sha256$",
        "sha256$" + String(passwordSHA256.dropLast()),
        "sha256$" + passwordSHA256 + "00",
        "sha256$" + String(passwordSHA256.dropLast()) + "g",
        "sha256$" + passwordSHA256 + "$",
        "SHA256$" + passwordSHA256,
        "sha512$" + passwordSHA256,
        "md5$5f4dcc3b5aa765d61d8327deb882cf99",
        "pbkdf2-sha256$1000$73616c7453414c5473616c74",
        "pbkdf2-sha256$1000$73616c7453414c5473616c74$dc4dadbb885c66e8b059dbc0864bb72eb33a31607bb4cadaa2d5b7732ed78146$",
        "pbkdf2-sha256$999$73616c7453414c5473616c74$dc4dadbb885c66e8b059dbc0864bb72eb33a31607bb4cadaa2d5b7732ed78146",
        "pbkdf2-sha256$10000001$73616c7453414c5473616c74$dc4dadbb885c66e8b059dbc0864bb72eb33a31607bb4cadaa2d5b7732ed78146",
        "pbkdf2-sha256$$73616c7453414c5473616c74$dc4dadbb885c66e8b059dbc0864bb72eb33a31607bb4cadaa2d5b7732ed78146",
        "pbkdf2-sha256$1e4$73616c7453414c5473616c74$dc4dadbb885c66e8b059dbc0864bb72eb33a31607bb4cadaa2d5b7732ed78146",
        "pbkdf2-sha256$1000$73616c745341$dc4dadbb885c66e8b059dbc0864bb72eb33a31607bb4cadaa2d5b7732ed78146",
        "pbkdf2-sha256$1000$73616c7453414c5473616c7$dc4dadbb885c66e8b059dbc0864bb72eb33a31607bb4cadaa2d5b7732ed78146",
        "pbkdf2-sha256$1000$73616c7453414c5473616c74$dc4dadbb885c66e8b059dbc0864bb72eb33a31607bb4cadaa2d5b7732ed781",
    ])
    func malformedOrWeakHashesAreRefused(text: String) {
        #expect(SecretHash(Substring(text)) == nil)
    }

    @Test func theIterationAndSaltBoundsAreInclusive() throws {
        let hash = "dc4dadbb885c66e8b059dbc0864bb72eb33a31607bb4cadaa2d5b7732ed78146"
        #expect(SecretHash(Substring("pbkdf2-sha256$1000$0001020304050607$" + hash)) != nil)  // 8-byte salt
        #expect(SecretHash(Substring("pbkdf2-sha256$10000000$0001020304050607$" + hash)) != nil)
    }

    @Test func aFastHashIsTheSHA256OfTheSecret() {
        let hash = SecretHash.make("password", fast: true)
        #expect(hash == .sha256(bytes(passwordSHA256)))
        #expect(hash.text == "sha256$" + passwordSHA256)
    }

    @Test func aPasswordHashIsSaltedPBKDF2ThatVerifies() throws {
        let first = SecretHash.make("correct horse", fast: false, iterations: 1000)
        let second = SecretHash.make("correct horse", fast: false, iterations: 1000)
        guard case .pbkdf2(let n, let salt, let digest) = first else {
            Issue.record("not PBKDF2: \(first.text)")
            return
        }
        #expect(n == 1000)
        #expect(salt.count == 16)
        #expect(digest == Secrets.pbkdf2SHA256(password: Array("correct horse".utf8), salt: salt, iterations: 1000))
        #expect(first != second, "two hashes of one password must have different salts")
        #expect(first.verify("correct horse") && second.verify("correct horse"))
        #expect(!first.verify("correct horsE"))
        // What it prints, it parses back.
        #expect(SecretHash(Substring(first.text)) == first)
    }

    @Test func accountFileHashesAreWhatTheLoaderReads() throws {
        #expect(accountFileHash(of: "password", apiKey: true) == "sha256$" + passwordSHA256)
        let text = accountFileHash(of: "s3cret pass", apiKey: false)
        #expect(text.hasPrefix("pbkdf2-sha256$200000$"))
        let hash = try #require(SecretHash(Substring(text)))
        #expect(hash.verify("s3cret pass"))
        #expect(!hash.verify("s3cret pas"))
    }

    /// An unknown email must cost what a known one costs: with a users_file
    /// made at 1,000 iterations, a refusal at the default 200,000 would tell
    /// unknown emails apart by taking 200 times longer.
    @Test func anUnknownEmailCostsWhatMostAccountsCost() {
        func iterations(_ hash: SecretHash) -> Int? { if case .pbkdf2(let n, _, _) = hash { n } else { nil } }
        let cheap = SecretHash.make("a", fast: false, iterations: 1000)
        let dear = SecretHash.make("b", fast: false, iterations: 5000)
        #expect(iterations(SecretHash.unknownUser(costingAsMostOf: [cheap, dear, cheap])) == 1000)
        #expect(iterations(SecretHash.unknownUser(costingAsMostOf: [SecretHash]())) == SecretHash.defaultIterations)
        #expect(!SecretHash.unknownUser(costingAsMostOf: [cheap]).verify("a"))
    }
}

/// Proves that `TokenSigner` tokens are `<kind>.<user>.<expiry>.<HMAC>`
/// with the documented lifetimes, verify only for their own kind, key and
/// unexpired time, fail on any tampering, and that the signing key is
/// created once (mode 0600) and reused across restarts.
@Suite struct TokenSignerTests {
    let signer = TokenSigner(key: Array(0..<32))

    @Test func anAccessTokenIsSignedClaims() {
        // HMAC-SHA-256 with key 00…1f over "a.key-gw.1801", computed with Python's hmac.
        #expect(
            signer.issue(.access, userID: "key-gw", now: 1)
                == "a.key-gw.1801.cac783e69c50eaa6055013dc82c2b6f3e9b048eacb767e68df53939cc54b29bb"
        )
    }

    @Test func aTokenVerifiesUntilItsExpiry() {
        let now: Int64 = 1_700_000_000
        let access = signer.issue(.access, userID: "user-af3c82544f648b38dc7d4034", now: now)
        #expect(signer.verify(access, kind: .access, now: now) == "user-af3c82544f648b38dc7d4034")
        #expect(signer.verify(access, kind: .access, now: now + 1799) == "user-af3c82544f648b38dc7d4034")
        #expect(signer.verify(access, kind: .access, now: now + 1800) == nil)
        let refresh = signer.issue(.refresh, userID: "key-gw", now: now)
        #expect(refresh.hasPrefix("r.key-gw.\(now + 30 * 24 * 3600)."))
        #expect(signer.verify(refresh, kind: .refresh, now: now + 30 * 24 * 3600 - 1) == "key-gw")
        #expect(signer.verify(refresh, kind: .refresh, now: now + 30 * 24 * 3600) == nil)
    }

    @Test func aTokenOfTheOtherKindIsRefused() {
        let access = signer.issue(.access, userID: "key-gw", now: 100)
        let refresh = signer.issue(.refresh, userID: "key-gw", now: 100)
        #expect(signer.verify(access, kind: .refresh, now: 100) == nil)
        #expect(signer.verify(refresh, kind: .access, now: 100) == nil)
        // Relabelled: the kind is signed too.
        #expect(signer.verify("r" + access.dropFirst(), kind: .refresh, now: 100) == nil)
    }

    @Test func aTamperedTokenIsRefused() throws {
        let token = signer.issue(.access, userID: "key-gw", now: 100)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 4)
        let mac = parts[3]
        let flipped = String(mac.dropLast()) + (mac.last == "0" ? "1" : "0")
        let tampered = [
            "a.key-gx.\(parts[2]).\(mac)",  // another user
            "a.key-gw.\(Int64(parts[2])! + 100_000).\(mac)",  // a later expiry
            "a.key-gw.\(parts[2]).\(flipped)",  // one MAC digit
            "a.key-gw.\(parts[2]).\(mac.dropLast(2))",  // a short MAC
            "a.key-gw.\(parts[2]).\(mac)00",  // a long MAC
            "a.key-gw.\(parts[2]).",
            "a.key-gw.\(parts[2])",
            "a.key-gw.\(parts[2]).\(mac).x",
            "a.key.gw.\(parts[2]).\(mac)",
            "",
        ]
        for text in tampered {
            #expect(signer.verify(text, kind: .access, now: 100) == nil, "\(text)")
        }
        #expect(signer.verify(token, kind: .access, now: 100) == "key-gw")
    }

    @Test func aTokenOfAnotherKeyIsRefused() {
        let other = TokenSigner(key: Array(repeating: 7, count: 32))
        #expect(other.verify(signer.issue(.access, userID: "key-gw", now: 100), kind: .access, now: 100) == nil)
    }

    @Test func anOverlongTokenIsRefusedUnread() {
        let user = String(repeating: "u", count: 600)
        #expect(signer.verify(signer.issue(.access, userID: user, now: 100), kind: .access, now: 100) == nil)
        let fits = String(repeating: "u", count: 400)
        #expect(signer.verify(signer.issue(.access, userID: fits, now: 100), kind: .access, now: 100) == fits)
    }

    @Test func theKeyIsCreatedOnceWithMode0600AndReused() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("server-token-key")
        let first = try TokenSigner.loadOrCreate(path: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect((attributes[.size] as? NSNumber)?.intValue == 32)
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
        let token = first.issue(.refresh, userID: "key-gw", now: 100)
        let second = try TokenSigner.loadOrCreate(path: path)
        #expect(second.verify(token, kind: .refresh, now: 100) == "key-gw")
    }

    @Test func aKeyFileOfTheWrongSizeIsReplaced() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("server-token-key")
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: path))
        let signer = try TokenSigner.loadOrCreate(path: path)
        let key = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(key.count == 32)
        // The returned signer uses the key now in the file.
        #expect(
            TokenSigner(key: Array(key)).verify(
                signer.issue(.access, userID: "key-gw", now: 100),
                kind: .access,
                now: 100
            ) == "key-gw"
        )
    }

    @Test func anUnwritableKeyPathSaysSo() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("missing-dir/server-token-key")
        #expect {
            _ = try TokenSigner.loadOrCreate(path: path)
        } throws: { error in
            guard let message = (error as? GatewayError)?.message else { return false }
            // The whole path, so the operator knows which file.
            return message.hasPrefix("Cannot create the token key ") && message.contains(path)
                && message.hasSuffix(": No such file or directory.")
        }
    }
}
