import EdgeIngestCore
import IngestAgent
import IngestGateway

#if canImport(Glibc)
import Glibc
#endif

struct HashSecretCommand: IngestdCommand {
    static let spec = CommandSpec(
        name: "hash-secret",
        abstract: "Hash a password or API key for an HTTP input's users_file or api_keys_file.",
        discussion: """
            Reads one secret from standard input (all of it, without surrounding whitespace, as \
            the agent reads its secret files; more than one line is refused; on a terminal, \
            asked for without echo) and prints its hash. The account files hold one "name hash" per line, \
            so the secret itself is never stored on the server.

            Passwords get PBKDF2-HMAC-SHA-256 (200,000 iterations, random salt). API keys \
            (--api-key) get SHA-256, fast enough to check on every batch when a key is sent as a \
            static bearer token; so an API key must be long and random: at least 20 characters.

            Examples:
              head -c 24 /dev/urandom | base64 > gateway-17.key
              echo "gateway-17 $(ingestd hash-secret --api-key < gateway-17.key)" >> /etc/ingestd/api-keys
              echo "ops@example.com $(ingestd hash-secret)" >> /etc/ingestd/users

            Exits 0 with the hash on stdout, 64 when the secret is empty, more than one line \
            or over 64 KiB, or an API key is too short.
            """,
        options: [apiKeyFlag.spec],
        command: HashSecretCommand.self
    )
    static let apiKeyFlag = Flag("api-key", help: "Hash an API key (SHA-256) rather than a password (PBKDF2).")

    let apiKey: Bool

    init(_ arguments: ParsedArguments) {
        apiKey = arguments[Self.apiKeyFlag]
    }

    func run() throws {
        let onTerminal = isatty(0) == 1
        // The prompt stays on the line being typed; the Enter (not echoed) ends it.
        if onTerminal { printErrorInline(apiKey ? "API key: " : "Password: ") }
        let text: String
        if onTerminal {
            text = readTypedLine()
            printErrorInline("\n")
        } else {
            // A secret is small; more than 64 KiB is refused, not cut (the
            // agent reads its secret files whole: a prefix would not match).
            guard let bytes = readAll(0, limit: Self.maxPipedBytes + 1) else {
                printError("Could not read standard input: \(String(cString: strerror(errno))).")
                throw ExitCodes.ioError
            }
            guard bytes.count <= Self.maxPipedBytes else {
                printError("Standard input holds more than \(Self.maxPipedBytes) bytes: a secret is one short line.")
                throw ExitCodes.usageError
            }
            text = String(decoding: bytes, as: UTF8.self)
        }
        let found = SecretText(text)
        guard case .secret(let secret) = found else {
            printError(
                "No usable secret: " + (found.problem("standard input") ?? "")
                    + ". Pipe it in, or type it at the prompt."
            )
            throw ExitCodes.usageError
        }
        if apiKey && secret.count < 20 {
            printError(
                "An API key must be at least 20 characters (it is hashed with plain SHA-256): make one with `head -c 24 /dev/urandom | base64`."
            )
            throw ExitCodes.usageError
        }
        print(accountFileHash(of: secret, apiKey: apiKey))
    }

    /// One line typed at the terminal, echo off.
    private func readTypedLine() -> String {
        var saved = termios()
        let restore = tcgetattr(0, &saved) == 0
        if restore {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            tcsetattr(0, TCSANOW, &quiet)
        }
        defer { if restore { tcsetattr(0, TCSANOW, &saved) } }
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(0, &byte, 1) == 1, byte != UInt8(ascii: "\n") { bytes.append(byte) }
        return String(decoding: bytes, as: UTF8.self)
    }

    static let maxPipedBytes = 65_536
}
