/// One server of a NATS cluster: `nats://host:4222` or `tls://host:4222`.
package struct NATSServerAddress: Sendable, Equatable, CustomStringConvertible {
    package var host: String
    package var port: Int
    /// `tls://`: TLS from the start of the session (after the server's INFO).
    package var tls: Bool

    package init(host: String, port: Int, tls: Bool) {
        self.host = host
        self.port = port
        self.tls = tls
    }

    /// Reads `nats://host[:port]` or `tls://host[:port]` (4222 by default);
    /// nil with the reason as text otherwise.
    package static func parse(_ text: String) -> Result<NATSServerAddress, JetStreamError> {
        let tls: Bool
        let rest: Substring
        if text.hasPrefix("nats://") {
            tls = false
            rest = text.dropFirst(7)
        } else if text.hasPrefix("tls://") {
            tls = true
            rest = text.dropFirst(6)
        } else {
            return .failure(JetStreamError(.configuration, "must start with nats:// or tls://"))
        }
        guard !rest.contains("@") else {
            return .failure(
                JetStreamError(
                    .configuration,
                    "must not carry credentials: use username and password_file, token_file or credentials_file"
                )
            )
        }
        let hostPort = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        var host = String(hostPort)
        var port = 4222
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else {
                return .failure(JetStreamError(.configuration, "has a '[' without its ']'"))
            }
            host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let after = hostPort[hostPort.index(after: close)...]
            if after.hasPrefix(":") {
                guard let n = Int(after.dropFirst()), (1...65535).contains(n) else {
                    return .failure(JetStreamError(.configuration, "has a port that is not 1 to 65535"))
                }
                port = n
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = String(hostPort[..<colon])
            guard let n = Int(hostPort[hostPort.index(after: colon)...]), (1...65535).contains(n) else {
                return .failure(JetStreamError(.configuration, "has a port that is not 1 to 65535"))
            }
            port = n
        }
        guard !host.isEmpty else { return .failure(JetStreamError(.configuration, "has no host")) }
        return .success(NATSServerAddress(host: host, port: port, tls: tls))
    }

    package var description: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return "\(tls ? "tls" : "nats")://\(name):\(port)"
    }
}

/// How the client proves who it is (one of them, or none).
package struct NATSCredentials: Sendable {
    package var username: String?
    package var password: String?
    package var token: String?
    /// A user NKey seed (from an NKey seed file or a `.creds` file).
    package var nkey: NATSNKey?
    /// A user JWT (from a `.creds` file), signed by an account.
    package var jwt: String?

    package init() {}

    /// Reads a `.creds` file's text (`nsc` writes them: the user JWT, then
    /// the NKey seed, each between BEGIN and END lines).
    package static func fromCredentialsFile(_ text: String) throws(JetStreamError) -> NATSCredentials {
        func block(_ begin: String) -> String? {
            let lines = text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" })
            guard let start = lines.firstIndex(where: { $0.contains(begin) }) else { return nil }
            return lines[(start + 1)...].map { String($0).trimmingSpaces }.first { !$0.isEmpty && !$0.hasPrefix("--") }
        }
        guard let jwt = block("BEGIN NATS USER JWT"), let seed = block("BEGIN USER NKEY SEED") else {
            throw JetStreamError(
                .configuration,
                "is not a NATS credentials file: it needs a 'BEGIN NATS USER JWT' block and a 'BEGIN USER NKEY SEED' block (as nsc writes them)"
            )
        }
        var credentials = NATSCredentials()
        credentials.jwt = jwt
        credentials.nkey = try NATSNKey(seed: seed)
        return credentials
    }

    /// What the credentials add to CONNECT, signing the server's nonce
    /// when a key is set.
    func connectOptions(nonce: String?, name: String) throws(JetStreamError) -> JSONValue {
        var members: [(String, JSONValue?)] = [
            ("verbose", .bool(false)), ("pedantic", .bool(false)), ("name", .string(name)),
            ("lang", .string("swift-edgeingest")), ("version", .string(EdgeIngestVersion.current)),
            ("protocol", .int(1)), ("headers", .bool(true)), ("no_responders", .bool(true)),
            ("user", username.map(JSONValue.string)), ("pass", password.map(JSONValue.string)),
            ("auth_token", token.map(JSONValue.string)),
        ]
        if let nkey {
            guard let nonce else {
                throw JetStreamError(
                    .configuration,
                    "the NATS server sent no nonce to sign: it does not take NKey or credentials-file logins"
                )
            }
            let signed = try nkey.sign(Array(nonce.utf8))
            members.append(("sig", .string(signed.signature)))
            if let jwt {
                members.append(("jwt", .string(jwt)))
            } else {
                members.append(("nkey", .string(try nkey.publicKey())))
            }
        }
        return .object(omittingNils: members)
    }
}

/// Where and how the JetStream sink publishes (`sink = "jetstream"`,
/// docs/SINKS.md).
///
/// ```swift
/// var settings = JetStreamSettings(
///     servers: [NATSServerAddress(host: "127.0.0.1", port: 4222, tls: false)],
///     stream: "TELEMETRY",
///     subject: try SubjectTemplate("telemetry.{client_id}.{type}", for: .nats),
///     clientID: "edge-17"
/// )
/// settings.createStream = .init(replicas: 3, duplicateWindowSeconds: 600)
/// ```
package struct JetStreamSettings: Sendable, CustomStringConvertible {
    /// How to create the stream when it does not exist.
    package struct StreamCreation: Sendable, Equatable {
        package var replicas: Int
        package var duplicateWindowSeconds: Int
        /// The subjects it takes; empty: the template's fixed part with `>`.
        package var subjects: [String]
        package init(replicas: Int, duplicateWindowSeconds: Int, subjects: [String] = []) {
            self.replicas = replicas
            self.duplicateWindowSeconds = duplicateWindowSeconds
            self.subjects = subjects
        }
    }

    /// Tried in order; a lost connection moves to the next one.
    package var servers: [NATSServerAddress]
    package var stream: String
    package var subject: SubjectTemplate
    /// The connection's name and the template's `{client_id}`.
    package var clientID: String
    package var credentials = NATSCredentials()
    /// TLS files (`ca_file`, client certificate) for tls:// servers or a
    /// server that requires TLS.
    package var tls: StreamConnection.TLSFiles?
    /// Nil: the stream must exist (checked at every connection).
    package var createStream: StreamCreation?
    /// Messages published and not yet acknowledged, at most.
    package var maxPending = 4096
    package var connectTimeoutMilliseconds = 10_000
    /// How long the sink waits for the next acknowledgement.
    package var timeoutMilliseconds = 30_000
    /// The longest a record can wait between a publish whose acknowledgement
    /// was lost and its re-send (the retry cap plus the timeouts): the
    /// stream's duplicate window should cover it.
    package var resendWithinSeconds = 100

    package init(servers: [NATSServerAddress], stream: String, subject: SubjectTemplate, clientID: String) {
        self.servers = servers
        self.stream = stream
        self.subject = subject
        self.clientID = clientID
    }

    /// The stream and the servers, never a credential.
    package var description: String {
        "JetStream stream \(stream) at \(servers.map(\.description).joined(separator: ", "))"
    }

    /// The subjects a created stream takes: the template's fixed start and
    /// `>` (`telemetry.{client_id}.{type}` takes `telemetry.>`), or the
    /// subject itself when it has no placeholder.
    package static func createdSubjects(for template: SubjectTemplate) -> [String] {
        guard template.parts.contains(where: { if case .text = $0 { return false } else { return true } }) else {
            return [template.text]
        }
        guard case .text(let literal)? = template.parts.first, let dot = literal.lastIndex(of: ".") else {
            return [">"]
        }
        return [String(literal[...dot]) + ">"]
    }
}
