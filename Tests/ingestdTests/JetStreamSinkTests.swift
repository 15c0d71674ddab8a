import EdgeIngestCore
import Foundation
import TestSupport
import Testing

/// `upload.sink = "jetstream"` through the built binary into real
/// nats-server nodes (Debian's, started by the tests), read back with the
/// NATS C client (Tests/Support/jetstream/js-tool.c): each record one
/// message whose `Nats-Msg-Id` is its `_id`, deleted from the queue only
/// after its PubAck; re-sends dropped by the stream itself.
@Suite(.serialized, .enabled(if: serverTestsEnabled(NATSCluster.executable), "needs nats-server and libnats-dev"))
struct JetStreamSinkTests {
    /// An agent publishing to `cluster`; `extra`'s `key = value` lines add
    /// to or replace the defaults below.
    static func fixture(_ cluster: NATSCluster, _ extra: String = "", inputs: String? = nil) throws -> AgentFixture {
        let upload = upload(cluster, extra)
        if let inputs { return try AgentFixture(upload, inputs: inputs) }
        return try AgentFixture(upload)
    }

    /// The `[upload]` section of ``fixture(_:_:inputs:)``.
    static func upload(_ cluster: NATSCluster, _ extra: String = "") -> String {
        var keys: [(String, String)] = [
            ("sink", "\"jetstream\""), ("urls", "[\(cluster.urls.map { "\"\($0)\"" }.joined(separator: ", "))]"),
            ("stream", "\"TELEMETRY\""), ("subject", "\"telemetry.{client_id}.{type}.{deviceId}\""),
            ("client_id", "\"edge-17\""), ("linger_ms", "20"), ("retry_base_ms", "50"), ("retry_cap_ms", "500"),
            ("connect_timeout_ms", "1000"), ("timeout_ms", "2000"), ("shutdown_timeout_ms", "1000"),
        ]
        for line in extra.split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2 else { continue }
            keys.removeAll { $0.0 == parts[0] }
            keys.append((parts[0], parts[1]))
        }
        return "\n[upload]\n" + keys.map { "\($0.0) = \($0.1)" }.joined(separator: "\n") + "\n"
    }

    static func readings(_ range: Range<Int>, prefix: String = "J") -> String {
        range.map { reading($0 % 40, device: "\(prefix)\($0)") + "\n" }.joined()
    }

    /// The `_id` inside a message's payload.
    static func payloadID(_ payload: String) -> String? {
        guard let range = payload.range(of: #""_id":""#) else { return nil }
        return String(payload[range.upperBound...].prefix(24))
    }

    @Test func eachRecordIsOneMessageWhoseMessageIDIsItsID() throws {
        let cluster = try NATSCluster()
        let fixture = try Self.fixture(cluster, "create_stream = true\nmax_records = 70")
        let result = try fixture.run(["run"], stdin: Data(Self.readings(0..<300).utf8))
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(result.stderr.contains("Created the JetStream stream"), "\(result.stderr.suffix(2000))")
        let messages = try cluster.messages("TELEMETRY")
        #expect(messages.count == 300)
        for message in messages {
            #expect(message.id == Self.payloadID(message.payload), "\(message)")
            #expect(message.subject.hasPrefix("telemetry.edge-17.WeatherSensor.J"), "\(message.subject)")
        }
        #expect(Set(messages.map(\.subject)).count == 300, "each record's deviceId in its subject")
        let info = try cluster.info("TELEMETRY")
        #expect(info["duplicate_window_s"] == "600", "the created stream's default window: \(info)")
        let status = try fixture.status()
        #expect(status["queued_records"] as? Int == 0)
        #expect(status["uploaded_total"] as? Int == 300)
        #expect(status["upload_duplicates_dropped"] as? Int == 0)
    }

    /// Two agents (two gateways after a failover, or a box restored from a
    /// backup) sending the same `_id`s: the stream keeps one copy, and the
    /// second agent counts the PubAcks that said `duplicate`.
    @Test func recordsSentAgainAreDroppedByTheStreamAndCounted() throws {
        let cluster = try NATSCluster()
        try cluster.createStream("TELEMETRY", subject: "telemetry.>")
        let text = (0..<500).map {
            #"{"_id":"65a1b2c3d4e5f607\#(String($0, radix: 16).leftPadded(8))","deviceId":"R\#($0)","temperatureInFahrenheit":66.7,"barometricPressureInHg":29.65,"windSpeedInMph":3}"#
                + "\n"
        }.joined()
        for attempt in 0..<2 {
            let fixture = try Self.fixture(cluster)
            let result = try fixture.run(["run"], stdin: Data(text.utf8))
            #expect(result.status == 0, "\(result.stderr.suffix(2000))")
            let status = try fixture.status()
            #expect(status["uploaded_total"] as? Int == 500, "\(status)")
            #expect(status["upload_duplicates_dropped"] as? Int == (attempt == 0 ? 0 : 500), "\(status)")
        }
        let messages = try cluster.messages("TELEMETRY")
        #expect(messages.count == 500)
        #expect(Set(messages.map(\.id)).count == 500)
    }

    @Test func aMissingStreamHoldsWithAClearReasonAndDeliversOnceItExists() throws {
        let cluster = try NATSCluster()
        let fixture = try Self.fixture(cluster)
        let first = try fixture.run(["run"], stdin: Data(Self.readings(0..<50).utf8))
        #expect(first.status == 75, "readings left queued: \(first.stderr.suffix(2000))")
        #expect(
            first.stderr.contains("the JetStream stream 'TELEMETRY' does not exist"),
            "\(first.stderr.suffix(2000))"
        )
        #expect(try fixture.queuedLines().count == 50)
        try cluster.createStream("TELEMETRY", subject: "telemetry.>")
        let second = try fixture.run(["run"], stdin: Data())
        #expect(second.status == 0, "\(second.stderr.suffix(2000))")
        #expect(try cluster.messages("TELEMETRY").count == 50)
        #expect(try fixture.queuedLines().isEmpty)
    }

    /// A subject outside the stream's subjects: a hold that names both.
    @Test func aSubjectOutsideTheStreamHoldsAndSaysSo() throws {
        let cluster = try NATSCluster()
        try cluster.createStream("TELEMETRY", subject: "elsewhere.>")
        let fixture = try Self.fixture(cluster)
        let result = try fixture.run(["run"], stdin: Data(Self.readings(0..<20).utf8))
        #expect(result.status == 75, "\(result.stderr.suffix(2000))")
        #expect(
            result.stderr.contains("is not one of stream TELEMETRY's subjects (elsewhere.>)"),
            "\(result.stderr.suffix(2000))"
        )
        #expect(try fixture.queuedLines().count == 20)
    }

    @Test func wrongCredentialsHoldAndTheRightOnesDeliver() throws {
        let cluster = try NATSCluster(
            extraConfig: """
                authorization { users: [ { user: edge, password: "s3cret-pass" } ] }

                """
        )
        try cluster.createStream("TELEMETRY", subject: "telemetry.>", credentials: ("edge", "s3cret-pass"))
        let passwordFile = try TemporaryDirectory()
        let wrong = passwordFile.file("wrong")
        let right = passwordFile.file("right")
        try "not-it\n".write(toFile: wrong, atomically: true, encoding: .utf8)
        try "s3cret-pass\n".write(toFile: right, atomically: true, encoding: .utf8)
        chmod(wrong, 0o600)
        chmod(right, 0o600)
        let refused = try Self.fixture(cluster, "username = \"edge\"\npassword_file = \"\(wrong)\"")
        let first = try refused.run(["run"], stdin: Data(Self.readings(0..<10).utf8))
        #expect(first.status == 75)
        #expect(first.stderr.contains("refused the credentials"), "\(first.stderr.suffix(2000))")
        #expect(!first.stderr.contains("not-it"), "no password in the log")
        let accepted = try Self.fixture(cluster, "username = \"edge\"\npassword_file = \"\(right)\"")
        let second = try accepted.run(["run"], stdin: Data(Self.readings(0..<10).utf8))
        #expect(second.status == 0, "\(second.stderr.suffix(2000))")
        #expect(try cluster.messages("TELEMETRY", credentials: ("edge", "s3cret-pass")).count == 10)
    }

    /// An NKey login: the agent signs the server's nonce with the seed; the
    /// server checks the signature against the public key it was given.
    @Test func anNKeySeedLogsIn() throws {
        let key = try NKeyForTests()
        let cluster = try NATSCluster(
            extraConfig: "authorization { users: [ { nkey: \(key.publicKey) } ] }\n"
        )
        let seeds = try TemporaryDirectory()
        let seedFile = seeds.file("edge.nk")
        try (key.seed + "\n").write(toFile: seedFile, atomically: true, encoding: .utf8)
        chmod(seedFile, 0o600)
        let fixture = try Self.fixture(cluster, "create_stream = true\nnkey_seed_file = \"\(seedFile)\"")
        let result = try fixture.run(["run"], stdin: Data(Self.readings(0..<25).utf8))
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect((try fixture.status())["uploaded_total"] as? Int == 25)
        #expect(!result.stderr.contains(key.seed))
    }

    @Test func aTokenLogsIn() throws {
        let cluster = try NATSCluster(extraConfig: "authorization { token: \"t0ken-for-the-edge\" }\n")
        let files = try TemporaryDirectory()
        let token = files.file("token")
        try "t0ken-for-the-edge\n".write(toFile: token, atomically: true, encoding: .utf8)
        chmod(token, 0o600)
        let fixture = try Self.fixture(cluster, "create_stream = true\ntoken_file = \"\(token)\"")
        let result = try fixture.run(["run"], stdin: Data(Self.readings(0..<15).utf8))
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect((try fixture.status())["uploaded_total"] as? Int == 15)
        #expect(!result.stderr.contains("t0ken-for-the-edge"))
        // Without it, the server refuses: a hold.
        let without = try Self.fixture(cluster).run(["run"], stdin: Data(Self.readings(0..<5).utf8))
        #expect(without.status == 75)
        #expect(without.stderr.contains("refused the credentials"), "\(without.stderr.suffix(2000))")
    }

    /// A server that requires TLS: a plain URL holds and says to use tls://;
    /// tls:// with the CA delivers; without the CA the certificate is refused.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")))
    func tlsWithTheCAFileDeliversAndAPlainURLIsToldWhy() throws {
        let pki = try TestPKI()
        let cluster = try NATSCluster(
            extraConfig: "tls { cert_file: \"\(pki.serverCert)\", key_file: \"\(pki.serverKey)\" }\n"
        )
        let plain = try Self.fixture(cluster, "create_stream = true")
        let refused = try plain.run(["run"], stdin: Data(Self.readings(0..<5).utf8))
        #expect(refused.status == 75)
        #expect(refused.stderr.contains("requires TLS: use tls://127.0.0.1"), "\(refused.stderr.suffix(2000))")
        let tlsURL = cluster.urls[0].replacingOccurrences(of: "nats://", with: "tls://")
        let secure = try Self.fixture(
            cluster,
            "urls = [\"\(tlsURL)\"]\ncreate_stream = true\nca_file = \"\(pki.ca)\""
        )
        let delivered = try secure.run(["run"], stdin: Data(Self.readings(0..<25).utf8))
        #expect(delivered.status == 0, "\(delivered.stderr.suffix(2000))")
        #expect((try secure.status())["uploaded_total"] as? Int == 25)
        let untrusted = try Self.fixture(cluster, "urls = [\"\(tlsURL)\"]")
        let unknownCA = try untrusted.run(["run"], stdin: Data(Self.readings(0..<5).utf8))
        #expect(unknownCA.status == 75)
        #expect(unknownCA.stderr.contains("certificate"), "\(unknownCA.stderr.suffix(2000))")
    }

    /// A `.creds` file (a user JWT signed by an account, and the user's
    /// seed) against a server in operator mode: the server checks the JWT
    /// chain and the nonce signed with the seed.
    @Test func aCredentialsFileLogsInToAServerInOperatorMode() throws {
        let chain = try OperatorChain()
        let cluster = try NATSCluster(extraConfig: chain.serverConfig)
        let files = try TemporaryDirectory()
        let creds = files.file("edge.creds")
        try chain.credentialsFile.write(toFile: creds, atomically: true, encoding: .utf8)
        chmod(creds, 0o600)
        let fixture = try Self.fixture(cluster, "create_stream = true\ncredentials_file = \"\(creds)\"")
        let checked = try fixture.run(["check-config"])
        #expect(checked.stdout.contains("login credentials file"), "\(checked.stdout)")
        let result = try fixture.run(["run"], stdin: Data(Self.readings(0..<12).utf8))
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect((try fixture.status())["uploaded_total"] as? Int == 12)
        #expect(!result.stderr.contains(chain.userSeed))
        // A user JWT signed by a key the operator does not know: refused, a hold.
        let stranger = try OperatorChain()
        try stranger.credentialsFile.write(toFile: creds, atomically: true, encoding: .utf8)
        let refused = try fixture.run(["run"], stdin: Data(Self.readings(12..<14).utf8))
        #expect(refused.status == 75)
        #expect(refused.stderr.contains("refused the credentials"), "\(refused.stderr.suffix(2000))")
    }

    /// A record larger than the stream's max_msg_size is refused alone: it
    /// becomes a dead letter, the others are stored.
    @Test func aRecordTooLargeForTheStreamIsItsOwnDeadLetter() throws {
        let cluster = try NATSCluster()
        try cluster.createStream("TELEMETRY", subject: "telemetry.>", maxMessageSize: 400)
        let fixture = try Self.fixture(
            cluster,
            "subject = \"telemetry.{type}\"",
            inputs: "[[inputs]]\nkind = \"stdin\"\nmax_line_bytes = 4096\n"
        )
        let big = String(repeating: "X", count: 600)
        let text = (0..<40).map { reading($0, device: $0 == 17 ? big : "B\($0)") + "\n" }.joined()
        let result = try fixture.run(["run"], stdin: Data(text.utf8))
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(try cluster.messages("TELEMETRY").count == 39)
        let status = try fixture.status()
        #expect(status["dead_letter_records"] as? Int == 1, "\(status)")
        let listed = try fixture.run(["dead-letter", "list"])
        #expect(listed.stdout.contains("1 dead letter"), "\(listed.stdout)")
        #expect(listed.stdout.contains("max_msg_size") || listed.stdout.contains("maximum"), "\(listed.stdout)")
    }

    /// A field value that would make a subject longer than a NATS control
    /// line: that record alone is a dead letter, the queue goes on.
    @Test func aSubjectTooLongForAControlLineIsThatRecordsDeadLetter() throws {
        let cluster = try NATSCluster()
        try cluster.createStream("TELEMETRY", subject: "telemetry.>")
        let fixture = try Self.fixture(cluster, inputs: "[[inputs]]\nkind = \"stdin\"\nmax_line_bytes = 8192\n")
        let long = String(repeating: "D", count: 3_950)
        let text = (0..<30).map { reading($0, device: $0 == 9 ? long : "S\($0)") + "\n" }.joined()
        let result = try fixture.run(["run"], stdin: Data(text.utf8))
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(try cluster.messages("TELEMETRY").count == 29)
        let listed = try fixture.run(["dead-letter", "list"])
        #expect(listed.stdout.contains("1 dead letter"), "\(listed.stdout)")
        #expect(listed.stdout.contains("control lines of 4096 bytes"), "\(listed.stdout)")
    }

    /// A stream whose duplicate window is shorter than a re-send can take is
    /// named at start, with the fix.
    @Test func aDuplicateWindowShorterThanAResendIsWarned() throws {
        let cluster = try NATSCluster()
        try cluster.createStream("TELEMETRY", subject: "telemetry.>", duplicateWindowSeconds: 5)
        let fixture = try Self.fixture(cluster, "retry_cap_ms = 60000")
        let result = try fixture.run(["run"], stdin: Data(Self.readings(0..<5).utf8))
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(
            result.stderr.contains("duplicate window is shorter than a re-send can take"),
            "\(result.stderr.suffix(2000))"
        )
        #expect(result.stderr.contains("jetstream.duplicate_window=5s"), "\(result.stderr.suffix(2000))")
        // The default window (2 minutes) covers the default retry cap: no warning.
        let quiet = try NATSCluster()
        try quiet.createStream("TELEMETRY", subject: "telemetry.>")
        let second = try Self.fixture(quiet).run(["run"], stdin: Data(Self.readings(0..<5).utf8))
        #expect(second.status == 0)
        #expect(!second.stderr.contains("duplicate window is shorter"), "\(second.stderr.suffix(2000))")
    }

    /// A PubAck lost (the server frozen after taking the messages) and the
    /// batch re-sent after the stream's duplicate window: the stream stores
    /// it twice, and the agent says so — counted and logged, never silent.
    @Test func aResendAfterTheDuplicateWindowIsCountedAsAPotentialDuplicate() throws {
        let cluster = try NATSCluster()
        try cluster.createStream("TELEMETRY", subject: "telemetry.>", duplicateWindowSeconds: 1)
        let fixture = try Self.fixture(cluster, "timeout_ms = 1500\nretry_base_ms = 500\nretry_cap_ms = 500")
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(Self.readings(0..<5))
        #expect(eventually { (try? cluster.info("TELEMETRY"))?["messages"] == "5" }, "\(agent.stderr.suffix(2000))")
        cluster.freeze(node: 0)
        agent.write(Self.readings(5..<10))
        usleep(3_500_000)  // the PubAcks time out; connecting again times out too
        cluster.thaw(node: 0)
        let settled = eventually(timeout: 30) {
            (try? fixture.status())?["queued_records"] as? Int == 0
                && ((try? fixture.status())?["upload_potential_duplicates"] as? Int ?? 0) > 0
        }
        let stderr = agent.stderr
        #expect(agent.terminate() == 0)
        #expect(settled, "\(stderr.suffix(3000))")
        #expect(stderr.contains("longer ago than the stream's duplicate window"), "\(stderr.suffix(3000))")
        let messages = try cluster.messages("TELEMETRY")
        #expect(Set(messages.map(\.id)).count == 10, "every reading is in the stream")
        #expect(messages.count >= 10)
        let text = try fixture.run(["status"]).stdout
        #expect(text.contains("re-sent late:"), "\(text)")
    }

    @Test func checkConfigNamesTheSinkAndRefusesBadKeys() throws {
        let cluster = try NATSCluster()
        let good = try Self.fixture(cluster, "create_stream = true\nstream_replicas = 3")
        let checked = try good.run(["check-config"])
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(checked.stdout.contains("JetStream stream TELEMETRY at \(cluster.urls[0])"), "\(checked.stdout)")
        #expect(checked.stdout.contains("created if missing (R3"), "\(checked.stdout)")
        let bad = try Self.fixture(cluster, "subject = \"telemetry.*\"\nstream_replicas = 3\ntopic = \"x\"")
        let refused = try bad.run(["check-config"])
        #expect(refused.status != 0)
        #expect(refused.stderr.contains("upload.subject"), "\(refused.stderr)")
        #expect(refused.stderr.contains("upload.topic"), "\(refused.stderr)")
    }
}

/// A user NKey made from random bytes with the agent's own encoder; the
/// server validates the public key's form and the signatures made with it.
struct NKeyForTests {
    let seed: String
    let publicKey: String

    init() throws {
        let key = NATSNKey(rawSeed: (0..<32).map { _ in UInt8.random(in: 0...255) })
        seed = key.seedText
        publicKey = try key.publicKey()
        // The text form reads back to the same key.
        _ = try NATSNKey(seed: seed)
    }
}

/// An operator, a system account, an account with JetStream and a user in
/// it, each with its own NKey, and the JWTs that chain them (NATS
/// decentralised auth, as `nsc` would make them): the server's config
/// (`operator`, `resolver: MEMORY`) and the user's `.creds` file.
struct OperatorChain {
    let serverConfig: String
    let credentialsFile: String
    let userSeed: String

    init() throws {
        func key(_ kind: NATSNKey.Kind) -> NATSNKey {
            NATSNKey(rawSeed: (0..<32).map { _ in UInt8.random(in: 0...255) }, kind: kind)
        }
        let op = key(.operator)
        let system = key(.account)
        let account = key(.account)
        let user = key(.user)
        let now = Int(Date().timeIntervalSince1970)
        func jwt(_ signer: NATSNKey, _ subject: NATSNKey, _ name: String, _ nats: [String: Any]) throws -> String {
            let header = try JSONSerialization.data(withJSONObject: ["typ": "JWT", "alg": "ed25519-nkey"])
            let claims: [String: Any] = [
                "jti": UUID().uuidString.replacingOccurrences(of: "-", with: ""), "iat": now,
                "iss": try signer.publicKey(), "name": name, "sub": try subject.publicKey(), "nats": nats,
            ]
            let body = try JSONSerialization.data(withJSONObject: claims)
            func base64URL(_ data: Data) -> String {
                data.base64EncodedString().replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            }
            let signed = base64URL(header) + "." + base64URL(body)
            return signed + "." + (try signer.sign(Array(signed.utf8)).signature)
        }
        let unlimited: [String: Any] = [
            "subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1, "wildcards": true, "conn": -1,
            "leaf": -1,
        ]
        var jetStream = unlimited
        for name in ["mem_storage", "disk_storage", "streams", "consumer"] { jetStream[name] = -1 }
        let operatorJWT = try jwt(op, op, "OP", ["type": "operator", "version": 2])
        let systemJWT = try jwt(op, system, "SYS", ["type": "account", "version": 2, "limits": unlimited])
        let accountJWT = try jwt(op, account, "EDGE", ["type": "account", "version": 2, "limits": jetStream])
        let userJWT = try jwt(
            account,
            user,
            "edge-17",
            [
                "type": "user", "version": 2, "pub": [:] as [String: Any], "sub": [:] as [String: Any], "subs": -1,
                "data": -1, "payload": -1,
            ]
        )
        serverConfig = """
            operator: \(operatorJWT)
            system_account: \(try system.publicKey())
            resolver: MEMORY
            resolver_preload: { \(try account.publicKey()): \(accountJWT), \(try system.publicKey()): \(systemJWT) }

            """
        userSeed = user.seedText
        credentialsFile = """
            -----BEGIN NATS USER JWT-----
            \(userJWT)
            ------END NATS USER JWT------

            -----BEGIN USER NKEY SEED-----
            \(userSeed)
            ------END USER NKEY SEED------

            """
    }
}
