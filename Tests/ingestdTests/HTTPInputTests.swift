import EdgeIngest
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `kind = "http"`: ingestd serving the ingest protocol (docs/PROTOCOL.md),
/// through the built binary on loopback — another ingestd logging in and
/// streaming to it, and each answer of the protocol by raw requests.
/// kill -9 of either side of a relay is the fault suite's `relay` scenario.
@Suite(.serialized) struct HTTPInputTests {
    static let apiKey = "k3y-0f-the-gateway-17-0123456789"
    /// A second account's key (gw-18): another tenant.
    static let otherAPIKey = "k3y-0f-the-gateway-18-9876543210"
    static let password = "correct horse battery staple"

    /// A gateway listening on a port the kernel picks, with an API key, a
    /// user, schema version 1 and the SQLite archive as its sink.
    struct Gateway {
        let fixture: AgentFixture
        /// Holds the account files (read when the agent starts).
        let accounts: TemporaryDirectory
        let agent: RunningAgent
        let port: Int
        var archive: String { fixture.dir.file("archive.sqlite") }
        var base: String { "http://127.0.0.1:\(port)" }

        /// - Parameters:
        ///   - queueFile: a queue file the gateway starts with (copied into
        ///     its state directory first).
        ///   - sharedIDSpace: `shared_id_space = true` unless the options set
        ///     `owner_field` (accounts without either hold uploads).
        init(
            _ options: String = "",
            types: String = AgentFixture.weatherSensorTOML,
            queueFile: String? = nil,
            sharedIDSpace: Bool = true,
            maxConnections: Int = 3
        ) throws {
            let accounts = try TemporaryDirectory()
            self.accounts = accounts
            let keyHash = try IngestdBinary.run(["hash-secret", "--api-key"], stdin: Data((apiKey + "\n").utf8)).stdout
            let otherKeyHash = try IngestdBinary.run(
                ["hash-secret", "--api-key"],
                stdin: Data((otherAPIKey + "\n").utf8)
            ).stdout
            let userHash = try IngestdBinary.run(["hash-secret"], stdin: Data((password + "\n").utf8)).stdout
            fixture = try AgentFixture(
                "\n[upload]\nsink = \"sqlite\"\npath = \"PLACEHOLDER\"\nlinger_ms = 20\n",
                queue: "schema_version = 1\n",
                inputs: """
                    [[inputs]]
                    kind = "http"
                    listen = "127.0.0.1:0"
                    app_id = "weather"
                    max_body_bytes = 8192
                    request_timeout_ms = 600
                    max_connections = \(maxConnections)
                    api_keys_file = "\(accounts.file("keys"))"
                    users_file = "\(accounts.file("users"))"
                    \(sharedIDSpace && !options.contains("owner_field") ? "shared_id_space = true" : "")
                    \(options)
                    """,
                types: types
            )
            try "# gateways\ngw-17 \(keyHash)\ngw-18 \(otherKeyHash)".write(
                toFile: accounts.file("keys"),
                atomically: true,
                encoding: .utf8
            )
            try "ops@example.com \(userHash)".write(toFile: accounts.file("users"), atomically: true, encoding: .utf8)
            let text = try String(contentsOfFile: fixture.configPath, encoding: .utf8)
            try text.replacingOccurrences(of: "PLACEHOLDER", with: fixture.dir.file("archive.sqlite"))
                .write(toFile: fixture.configPath, atomically: true, encoding: .utf8)
            if let queueFile {
                try FileManager.default.createDirectory(
                    atPath: fixture.stateDirectory,
                    withIntermediateDirectories: true
                )
                try FileManager.default.copyItem(atPath: queueFile, toPath: fixture.stateDirectory + "/queue.sqlite")
            }
            agent = try RunningAgent(
                arguments: ["run", "--config", fixture.configPath],
                environment: IngestdBinary.environment,
                stdinFile: "/dev/null"
            )
            guard let listen = fixture.listenAddress(), let port = Int(listen.split(separator: ":").last ?? "") else {
                throw ToolFailure("the gateway did not start listening: \(agent.stderr.suffix(2000))")
            }
            self.port = port
        }

        /// Waits until the archive holds `count` rows.
        func waitUntilArchived(_ count: Int) -> Bool {
            eventually { (try? sqlite3(archive, "SELECT count(*) FROM WeatherSensor")) == String(count) }
        }
    }

    static func line(_ id: String?, device: String, extra: String = "") -> String {
        let idField = id.map { "\"_id\":\"\($0)\"," } ?? ""
        return
            "{\(idField)\"deviceId\":\"\(device)\",\"temperatureInFahrenheit\":61.5,\"barometricPressureInHg\":29.9,\"windSpeedInMph\":3\(extra)}\n"
    }

    static func login(_ gateway: Gateway, _ body: String) throws -> HTTPAnswer {
        try httpRequest(
            "POST",
            gateway.base + "/auth/v1/apps/weather/login",
            headers: ["Content-Type": "application/json"],
            body: Array(body.utf8)
        )
    }

    /// Sends `count` one-reading batches with a valid key, each sent again
    /// (up to 10 times, 100 ms apart) after a 503 or a connection closed
    /// unanswered (-1), as an uploader does. Returns the batches stored and
    /// every attempt's status.
    static func sendUntilStored(
        _ count: Int,
        to gateway: Gateway,
        idPrefix: String,
        device: String
    ) throws -> (stored: Int, attempts: [Int]) {
        var stored = 0
        var attempts: [Int] = []
        for n in 0..<count {
            for _ in 0..<10 {
                let answer = try httpRequest(
                    "POST",
                    gateway.base + "/ingest/v1/batches",
                    headers: ["Authorization": "Bearer " + apiKey, "Content-Type": "application/x-ndjson"],
                    body: Array(line(idPrefix + String(format: "%04x", n), device: "\(device)\(n)").utf8)
                )
                attempts.append(answer.status)
                if answer.status == 200 { stored += 1 }
                guard answer.status == 503 || answer.status == -1 else { break }
                usleep(100_000)
            }
        }
        return (stored, attempts)
    }

    @Test func anotherIngestdLogsInWithAnAPIKeyAndEveryReadingIsArchivedOnce() throws {
        let gateway = try Gateway()
        let keys = try TemporaryDirectory()
        try "\(Self.apiKey)\n".write(toFile: keys.file("api-key"), atomically: true, encoding: .utf8)
        let edge = try AgentFixture(
            """

            [upload]
            url = "\(gateway.base)/ingest/v1/apps/weather/batches"
            linger_ms = 20
            max_records = 300
            gzip = true

            [auth]
            app_id = "weather"
            base_url = "\(gateway.base)"
            api_key_file = "\(keys.file("api-key"))"
            """
        )
        let readings = (0..<3000).map { reading($0 % 40, device: "E\($0)") + "\n" }.joined()
        let result = try edge.run(["run"], stdin: Data(readings.utf8))
        #expect(result.status == 0, "\(result.stderr.suffix(2000))")
        #expect(try edge.status()["uploaded_total"] as? Int == 3000)
        #expect(gateway.waitUntilArchived(3000), "\(gateway.agent.stderr.suffix(2000))")
        #expect(
            try sqlite3(gateway.archive, "SELECT count(DISTINCT _id), count(DISTINCT deviceId) FROM WeatherSensor")
                == "3000|3000"
        )
        #expect(gateway.agent.terminate() == 0)
        let status = try gateway.fixture.status()
        #expect(status["accepted_total"] as? Int == 3000)
        #expect(status["uploaded_total"] as? Int == 3000)
        #expect(status["queued_records"] as? Int == 0)
        #expect(!gateway.agent.stderr.contains(Self.apiKey))
    }

    /// Tenants (issue 23): an account that sends another's `_id` first
    /// neither suppresses the other's reading (it is stored, not answered
    /// as a duplicate) nor learns of it; each account's own re-sends are
    /// still stored once; with `owner_field` the archive keeps both
    /// readings, each under its account, and a record naming another
    /// account is refused.
    @Test func oneAccountCannotSuppressOrClaimAnothersReadings() throws {
        let types = AgentFixture.weatherSensorTOML + "\nowner_id = \"string?\"\n"
        let gateway = try Gateway("owner_field = \"owner_id\"", types: types)
        let url = gateway.base + "/ingest/v1/batches"
        func post(_ key: String, _ lines: [String]) throws -> HTTPAnswer {
            try httpRequest(
                "POST",
                url,
                headers: ["Authorization": "Bearer " + key, "Content-Type": "application/x-ndjson"],
                body: Array(lines.joined().utf8)
            )
        }
        let shared = "65f1c2a9e1b2c3d4e5f6a001"
        let mallory = try post(Self.otherAPIKey, [Self.line(shared, device: "MALLORY")])
        #expect(mallory.status == 200 && mallory.json["accepted"] as? Int == 1, "\(mallory.text)")
        let alice = [Self.line(shared, device: "ALICE"), Self.line("65f1c2a9e1b2c3d4e5f6a002", device: "ALICE-2")]
        let first = try post(Self.apiKey, alice)
        #expect(first.json["accepted"] as? Int == 2 && first.json["duplicate"] as? Int == 0, "\(first.text)")
        #expect(first.json["rejected"] == nil)
        let again = try post(Self.apiKey, alice)
        #expect(again.json["accepted"] as? Int == 0 && again.json["duplicate"] as? Int == 2, "\(again.text)")
        // Claiming another account as owner is refused, by line.
        let claim = try post(
            Self.otherAPIKey,
            [
                Self.line("65f1c2a9e1b2c3d4e5f6a003", device: "MALLORY-2"),
                Self.line("65f1c2a9e1b2c3d4e5f6a004", device: "FORGED", extra: #","owner_id":"key-gw-17""#),
            ]
        )
        #expect(claim.json["accepted"] as? Int == 1, "\(claim.text)")
        let rejected = claim.json["rejected"] as? [[String: Any]]
        #expect(rejected?.count == 1 && rejected?.first?["index"] as? Int == 1)
        #expect(rejected?.first?["reason"] as? String == "owner_mismatch")
        #expect(gateway.waitUntilArchived(4), "\(gateway.agent.stderr.suffix(2000))")
        #expect(
            try sqlite3(
                gateway.archive,
                "SELECT group_concat(owner_id || ' ' || _id || ' ' || deviceId, ',') FROM (SELECT * FROM WeatherSensor ORDER BY owner_id, _id)"
            )
                == "key-gw-17 \(shared) ALICE,key-gw-17 65f1c2a9e1b2c3d4e5f6a002 ALICE-2,key-gw-18 \(shared) MALLORY,key-gw-18 65f1c2a9e1b2c3d4e5f6a003 MALLORY-2"
        )
        #expect(gateway.agent.terminate() == 0)
        let status = try gateway.fixture.status()
        #expect(status["received_conflicts_total"] as? Int ?? 0 == 0)
        #expect(!gateway.agent.stderr.contains("FORGED"))
    }

    /// Per-account quotas (issue 23): an account over its records a second
    /// is answered 429 with Retry-After and nothing of the batch is stored;
    /// another account is not slowed; the journal and status say so.
    @Test func anAccountOverItsQuotaGets429WithRetryAfterAndOthersDoNot() throws {
        let gateway = try Gateway("quota_records_per_second = 50\nquota_burst_s = 1\n")
        let url = gateway.base + "/ingest/v1/batches"
        func post(_ key: String, _ first: Int, _ count: Int) throws -> HTTPAnswer {
            let lines = (first..<first + count).map {
                Self.line(String(format: "65f1c2a9e1b2c3d4e5f7%04x", $0), device: "Q\($0)")
            }
            return try httpRequest(
                "POST",
                url,
                headers: ["Authorization": "Bearer " + key, "Content-Type": "application/x-ndjson"],
                body: Array(lines.joined().utf8)
            )
        }
        // 50 saved up; 60 is admitted into debt, then the account waits.
        #expect(try post(Self.apiKey, 0, 60).json["accepted"] as? Int == 60)
        let refused = try post(Self.apiKey, 100, 10)
        #expect(refused.status == 429, "\(refused.text)")
        #expect(refused.json["error"] as? String == "quota_exceeded")
        #expect((refused.json["message"] as? String)?.contains("50 records/s") == true)
        let other = try post(Self.otherAPIKey, 200, 40)
        #expect(other.status == 200 && other.json["accepted"] as? Int == 40, "\(other.text)")
        #expect(gateway.waitUntilArchived(100), "\(gateway.agent.stderr.suffix(2000))")
        #expect(gateway.agent.terminate() == 0)
        #expect(gateway.agent.stderr.contains("An account sends more than its quota"))
        #expect(gateway.agent.stderr.contains("ingest.account=key-gw-17"))
        let inputs = try gateway.fixture.status()["inputs"] as? [[String: Any]]
        #expect(inputs?.first?["throttledBatches"] as? Int == 1, "\(String(describing: inputs))")
    }

    /// A login flood (a client guessing, a fleet with a wrong key) is a few
    /// lines in the journal, not one per attempt (88,915 lines in 25 s
    /// before), and the throttle's 429 carries its reason phrase.
    @Test func aLoginFloodIsSummarizedInTheLog() throws {
        let gateway = try Gateway()
        var statuses: [Int] = []
        for attempt in 0..<150 {
            let body = #"{"provider":"email-password","email":"u\#(attempt)@example.com","password":"p"}"#
            statuses.append(try Self.login(gateway, body).status)
        }
        #expect(statuses.contains(401) && statuses.contains(429), "\(Set(statuses))")
        let raw = try rawStatusLine(gateway.base, "/auth/v1/apps/weather/login", #"{"provider":"api-key","key":"x"}"#)
        #expect(raw == "HTTP/1.1 429 Too Many Requests", "\(raw)")
        #expect(gateway.agent.terminate() == 0)
        let log = gateway.agent.stderr.split(separator: "\n")
        let refused = log.filter { $0.contains("Refused a login") }.count
        let throttled = log.filter { $0.contains("Throttled a login") }.count
        #expect(
            refused <= 10 && throttled <= 10,
            "\(refused) refused and \(throttled) throttled lines for 150 attempts"
        )
    }

    /// The status line of one POST, as sent (curl hides the reason phrase).
    func rawStatusLine(_ base: String, _ path: String, _ body: String) throws -> String {
        let client = try RawClient(port: Int(base.split(separator: ":").last!)!)
        client.send(
            "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
        )
        return String(client.readAnswer(timeoutMs: 5_000).split(separator: "\r\n").first ?? "")
    }

    /// Guessing passwords: after five failures an account's logins are
    /// answered 429 with a delay, alike for an account that exists and one
    /// that does not, before any password is checked; the journal says so
    /// without the email or password (issue 23).
    @Test func repeatedFailedLoginsAreThrottledAlikeForKnownAndUnknownAccounts() throws {
        let gateway = try Gateway()
        func attempt(_ email: String, _ password: String) throws -> HTTPAnswer {
            try Self.login(gateway, #"{"provider":"email-password","email":"\#(email)","password":"\#(password)"}"#)
        }
        var answers: [String: [HTTPAnswer]] = [:]
        for email in ["ops@example.com", "nobody@example.com"] {
            var seen: [HTTPAnswer] = []
            // Five refusals, then 429 (a slow machine may let a sixth through after its 1 s delay).
            while seen.count < 12, seen.last?.status != 429 { seen.append(try attempt(email, "guess-\(seen.count)")) }
            answers[email] = seen
        }
        for (email, seen) in answers {
            #expect(seen.prefix(5).allSatisfy { $0.status == 401 }, "\(email): \(seen.map(\.status))")
            #expect(seen.last?.status == 429, "\(email): \(seen.map(\.status))")
            #expect(seen.last?.json["error"] as? String == "too_many_logins")
            #expect((seen.last?.json["message"] as? String)?.hasPrefix("too many failed logins: try again in ") == true)
        }
        #expect(gateway.agent.stderr.contains("Throttled a login after repeated failures"))
        #expect(!gateway.agent.stderr.contains("nobody@example.com") && !gateway.agent.stderr.contains("guess-"))
        // An API key from this address still works: the address allows more failures than an account.
        #expect(try Self.login(gateway, #"{"provider":"api-key","key":"\#(Self.apiKey)"}"#).status == 200)
    }

    @Test func loginsRefreshesAndBearerChecks() throws {
        let gateway = try Gateway()
        let batch = Array(Self.line("65f1c2a9e1b2c3d4e5f60001", device: "L1").utf8)
        let url = gateway.base + "/ingest/v1/batches"
        #expect(try httpRequest("POST", url, body: batch).status == 401)
        #expect(try httpRequest("POST", url, headers: ["Authorization": "Bearer nonsense"], body: batch).status == 401)
        #expect(try Self.login(gateway, #"{"provider":"api-key","key":"wrong-key-0123456789abcdef"}"#).status == 401)
        #expect(try Self.login(gateway, #"{"provider":"anonymous"}"#).status == 401)  // not allowed here
        #expect(
            try Self.login(gateway, #"{"provider":"email-password","email":"ops@example.com","password":"nope"}"#)
                .status == 401
        )
        #expect(try Self.login(gateway, #"{"provider":"magic"}"#).status == 400)
        let user = try Self.login(
            gateway,
            #"{"provider":"email-password","email":"OPS@example.com","password":"\#(Self.password)"}"#
        )
        #expect(user.status == 200, "\(user.text)")
        let again = try Self.login(
            gateway,
            #"{"provider":"email-password","email":"ops@example.com","password":"\#(Self.password)"}"#
        )
        #expect((user.json["user_id"] as? String)?.hasPrefix("user-") == true)
        #expect(user.json["user_id"] as? String == again.json["user_id"] as? String)  // the same user on every login
        let key = try Self.login(gateway, #"{"provider":"api-key","key":"\#(Self.apiKey)"}"#)
        #expect(key.status == 200 && key.json["user_id"] as? String == "key-gw-17", "\(key.text)")
        #expect(key.json["expires_in"] as? Int == 1800)
        let access = try #require(key.json["access_token"] as? String)
        let refresh = try #require(key.json["refresh_token"] as? String)
        #expect(try httpRequest("POST", url, headers: ["Authorization": "Bearer " + access], body: batch).status == 200)
        // A refresh token is not an access token, and the reverse.
        #expect(
            try httpRequest("POST", url, headers: ["Authorization": "Bearer " + refresh], body: batch).status == 401
        )
        let refreshAuth = "/auth/v1/apps/weather/refresh"
        #expect(
            try httpRequest("POST", gateway.base + refreshAuth, headers: ["Authorization": "Bearer " + access]).status
                == 401
        )
        let refreshed = try httpRequest(
            "POST",
            gateway.base + refreshAuth,
            headers: ["Authorization": "Bearer " + refresh]
        )
        #expect(refreshed.status == 200 && refreshed.json["access_token"] is String, "\(refreshed.text)")
        // A tampered token (another user id, same MAC) is refused.
        let tampered = access.replacingOccurrences(of: "key-gw-17", with: "key-gw-18")
        #expect(
            try httpRequest("POST", url, headers: ["Authorization": "Bearer " + tampered], body: batch).status == 401
        )
        // The API key itself works as a static bearer token (ingestd's upload.token_file).
        #expect(
            try httpRequest("POST", url, headers: ["Authorization": "Bearer " + Self.apiKey], body: batch).status == 200
        )
        #expect(
            try httpRequest(
                "POST",
                gateway.base + "/auth/v1/apps/weather/logout",
                headers: ["Authorization": "Bearer " + refresh]
            ).status == 204
        )
        // Stateless tokens: logging out does not revoke the refresh token (docs/PROTOCOL.md).
        #expect(
            try httpRequest("POST", gateway.base + refreshAuth, headers: ["Authorization": "Bearer " + refresh]).status
                == 200
        )
        #expect(
            try httpRequest("POST", gateway.base + "/auth/v1/apps/other/login", body: Array("{}".utf8)).status == 404
        )
        #expect(gateway.agent.terminate() == 0)
        let log = gateway.agent.stderr
        #expect(log.contains("Refused a login"), "\(log.suffix(2000))")
        for secret in [Self.apiKey, Self.password, "wrong-key-0123456789abcdef", access, refresh] {
            #expect(!log.contains(secret), "a secret in the log")
        }
    }

    @Test func batchesAreValidatedPerRecordDeduplicatedAndAnsweredByTheProtocol() throws {
        let gateway = try Gateway()
        let url = gateway.base + "/ingest/v1/apps/weather/batches"
        let auth = [
            "Authorization": "Bearer " + Self.apiKey, "EdgeIngest-Record-Type": "WeatherSensor",
            "EdgeIngest-Schema-Version": "1",
        ]
        let body =
            Self.line("65f1c2a9e1b2c3d4e5f60011", device: "B1") + Self.line(nil, device: "B2")
            + Self.line("65f1c2a9e1b2c3d4e5f60013", device: "B3", extra: ",\"colour\":\"red\"") + "{not json\n"
            + Self.line("65f1c2a9e1b2c3d4e5f60015", device: "B5")
        let first = try httpRequest("POST", url, headers: auth, body: Array(body.utf8))
        #expect(first.status == 200, "\(first.text)")
        #expect(first.json["accepted"] as? Int == 2 && first.json["duplicate"] as? Int == 0, "\(first.text)")
        let rejected = (first.json["rejected"] as? [[String: Any]] ?? []).map {
            "\($0["index"] ?? "?"):\($0["reason"] ?? "?")"
        }
        #expect(rejected == ["1:missing_id", "2:unknown_field", "3:malformed_json"], "\(first.text)")
        // The same batch again (a lost acknowledgement): stored once.
        let second = try httpRequest("POST", url, headers: auth, body: Array(body.utf8))
        #expect(second.json["accepted"] as? Int == 0 && second.json["duplicate"] as? Int == 2, "\(second.text)")
        // gzip, with one new record and one seen.
        let gzipped = try Gzip.compress(
            ArraySlice(
                (Self.line("65f1c2a9e1b2c3d4e5f60015", device: "B5")
                    + Self.line("65f1c2a9e1b2c3d4e5f60016", device: "B6")).utf8
            )
        )
        let third = try httpRequest(
            "POST",
            url,
            headers: auth.merging(["Content-Encoding": "gzip"]) { $1 },
            body: gzipped
        )
        #expect(third.json["accepted"] as? Int == 1 && third.json["duplicate"] as? Int == 1, "\(third.text)")
        // A conflict: B1's `_id` with other content is refused (not a re-send),
        // answered at its line, and the rest of the batch is stored.
        let conflicting =
            "{not json\n" + Self.line("65f1c2a9e1b2c3d4e5f60011", device: "B1-other")
            + Self.line("65f1c2a9e1b2c3d4e5f60017", device: "B7")
        let fourth = try httpRequest("POST", url, headers: auth, body: Array(conflicting.utf8))
        #expect(fourth.json["accepted"] as? Int == 1 && fourth.json["duplicate"] as? Int == 0, "\(fourth.text)")
        let refused = (fourth.json["rejected"] as? [[String: Any]] ?? []).map {
            "\($0["index"] ?? "?"):\($0["reason"] ?? "?")"
        }
        #expect(refused == ["0:malformed_json", "1:duplicate_id"], "\(fourth.text)")
        #expect(
            try httpRequest("POST", url, headers: auth.merging(["Content-Encoding": "br"]) { $1 }, body: [1]).status
                == 415
        )
        #expect(
            try httpRequest("POST", url, headers: auth.merging(["Content-Encoding": "gzip"]) { $1 }, body: [1, 2, 3])
                .status == 400
        )
        // Too large, before and after decompression.
        let big = String(repeating: Self.line("65f1c2a9e1b2c3d4e5f60020", device: "X"), count: 100)
        #expect(try httpRequest("POST", url, headers: auth, body: Array(big.utf8)).status == 413)
        let bomb = try Gzip.compress(ArraySlice([UInt8](repeating: 0x20, count: 200_000)), level: 9)
        #expect(bomb.count < 8192)
        #expect(
            try httpRequest("POST", url, headers: auth.merging(["Content-Encoding": "gzip"]) { $1 }, body: bomb).status
                == 413
        )
        // Client resets: a newer schema, an older session epoch.
        let newer = try httpRequest(
            "POST",
            url,
            headers: auth.merging(["EdgeIngest-Schema-Version": "2"]) { $1 },
            body: Array(body.utf8)
        )
        #expect(
            newer.status == 409 && newer.json["reason"] as? String == "schema_too_new"
                && newer.json["recoverable"] as? Bool == false,
            "\(newer.text)"
        )
        let one = Array(Self.line("65f1c2a9e1b2c3d4e5f60031", device: "S1").utf8)
        #expect(
            try httpRequest("POST", url, headers: auth.merging(["EdgeIngest-Session": "abc-3"]) { $1 }, body: one)
                .status == 200
        )
        let stale = try httpRequest(
            "POST",
            url,
            headers: auth.merging(["EdgeIngest-Session": "abc-2"]) { $1 },
            body: Array(Self.line("65f1c2a9e1b2c3d4e5f60032", device: "S2").utf8)
        )
        #expect(
            stale.status == 409 && stale.json["error"] as? String == "client_reset_required"
                && stale.json["recoverable"] as? Bool == true,
            "\(stale.text)"
        )
        #expect(
            try httpRequest(
                "POST",
                url,
                headers: auth.merging(["EdgeIngest-Session": "abc-4"]) { $1 },
                body: Array(Self.line("65f1c2a9e1b2c3d4e5f60032", device: "S2").utf8)
            ).status == 200
        )
        #expect(
            try httpRequest("POST", url, headers: auth.merging(["EdgeIngest-Protocol": "2"]) { $1 }, body: one).status
                == 501
        )
        // Routes.
        #expect(try httpRequest("GET", url, headers: auth).status == 405)
        #expect(
            try httpRequest("POST", gateway.base + "/ingest/v1/apps/other/batches", headers: auth, body: one).status
                == 404
        )
        #expect(try httpRequest("GET", gateway.base + "/nowhere").status == 404)
        #expect(try httpRequest("GET", gateway.base + "/healthz").text == "ok\n")
        // Stored: B1, B5, B6, B7, S1, S2 — each once, after the commit that preceded each 200.
        #expect(gateway.waitUntilArchived(6), "\(gateway.agent.stderr.suffix(2000))")
        #expect(
            try sqlite3(
                gateway.archive,
                "SELECT group_concat(deviceId, ',') FROM (SELECT deviceId FROM WeatherSensor ORDER BY deviceId)"
            ) == "B1,B5,B6,B7,S1,S2"
        )
        #expect(gateway.agent.terminate() == 0)
        let status = try gateway.fixture.status()
        #expect(status["accepted_total"] as? Int == 6)
        #expect(status["received_duplicates_total"] as? Int == 3)
        #expect(status["received_conflicts_total"] as? Int == 1)
        #expect(
            (status["rejected_by_reason"] as? [String: Int]) == [
                "missing_id": 2, "unknown_field": 2, "malformed_json": 3, "duplicate_id": 1,
            ]
        )
        #expect(gateway.agent.stderr.contains("ingest.reason=duplicate_id"), "\(gateway.agent.stderr.suffix(2000))")
        #expect(gateway.agent.stderr.contains("Rejected a received record"))
        #expect(!gateway.agent.stderr.contains("B2"), "no payloads in the log")
    }

    /// A gateway whose queue holds 5 records and uploads nowhere: a batch
    /// that can never fit gets 413, one that does not fit now 503 with
    /// Retry-After; a malformed session header 400.
    @Test func aFullQueueAndMalformedHeadersAreAnsweredWithoutStoring() throws {
        let fixture = try AgentFixture(
            queue: "max_records = 5\noverflow_policy = \"block\"\n",
            inputs: "[[inputs]]\nkind = \"http\"\nlisten = \"127.0.0.1:0\"\n"
        )
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment,
            stdinFile: "/dev/null"
        )
        let address = try #require(fixture.listenAddress(), "\(agent.stderr)")
        let url = "http://\(address)/ingest/v1/batches"
        let lines = (0..<6).map { Self.line(String(format: "65f1c2a9e1b2c3d4e5f600%02x", $0 + 0x40), device: "Q\($0)") }
        let six = try httpRequest("POST", url, body: Array(lines.joined().utf8))
        #expect(six.status == 413 && six.json["error"] as? String == "too_large", "\(six.text)")
        #expect(try httpRequest("POST", url, body: Array(lines[0..<4].joined().utf8)).json["accepted"] as? Int == 4)
        let full = try httpRequest("POST", url, body: Array(lines[4..<6].joined().utf8))
        #expect(full.status == 503 && full.json["error"] as? String == "queue_full", "\(full.text)")
        // A small body of many lines: refused by count before anything is decoded or logged.
        let newlines = try httpRequest("POST", url, body: [UInt8](repeating: 0x0A, count: 10_001))
        #expect(newlines.status == 413 && newlines.json["error"] as? String == "too_many_records", "\(newlines.text)")
        // Rejections past the first ten of a batch are logged as one line.
        let bad = try httpRequest("POST", url, body: Array(String(repeating: "{not json\n", count: 30).utf8))
        #expect((bad.json["rejected"] as? [Any])?.count == 30, "\(bad.text)")
        let badSession = try httpRequest(
            "POST",
            url,
            headers: ["EdgeIngest-Session": "no-epoch-x"],
            body: Array(lines[5].utf8)
        )
        #expect(badSession.status == 400 && badSession.json["error"] as? String == "bad_header", "\(badSession.text)")
        #expect(agent.terminate() == 0)
        #expect(try fixture.status()["accepted_total"] as? Int == 4)
        #expect(
            agent.stderr.components(separatedBy: "Rejected a received record").count - 1 == 10,
            "\(agent.stderr.suffix(3000))"
        )
        #expect(agent.stderr.contains("ingest.more=20"), "\(agent.stderr.suffix(3000))")
    }

    @Test func slowAndSurplusClientsAreCutOffWithoutStallingOthers() throws {
        let gateway = try Gateway()
        // A head that trickles (slowloris): 408 after request_timeout_ms (600 ms), then closed.
        let slow = try RawClient(port: gateway.port)
        slow.send("POST /ingest/v1/batches HTTP/1.1\r\nHost: x\r\n")
        // Meanwhile another client is served: before the slow one's 408.
        #expect(try httpRequest("GET", gateway.base + "/healthz").status == 200)
        #expect(slow.readAll(timeoutMs: 0).isEmpty, "the slow client was answered before the other was served")
        let answer = slow.readAll(timeoutMs: 5_000)
        #expect(answer.hasPrefix("HTTP/1.1 408 "), "\(answer)")
        // A body announced bigger than max_body_bytes: 413 without reading it.
        let big = try RawClient(port: gateway.port)
        big.send("POST /ingest/v1/batches HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999\r\n\r\n")
        #expect(big.readAll(timeoutMs: 5_000).hasPrefix("HTTP/1.1 413 "))
        // Chunked bodies: 411. Garbage: 400.
        let chunked = try RawClient(port: gateway.port)
        chunked.send("POST /ingest/v1/batches HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        #expect(chunked.readAll(timeoutMs: 5_000).hasPrefix("HTTP/1.1 411 "))
        let garbage = try RawClient(port: gateway.port)
        garbage.send("\u{1}\u{2}nonsense\r\n\r\n")
        #expect(garbage.readAll(timeoutMs: 5_000).hasPrefix("HTTP/1.1 400 "))
        // max_connections = 3, all taken by connections that sent nothing: a
        // newcomer takes the place of the longest-quiet one, closed unanswered.
        let quiet = try (0..<3).map { _ in try RawClient(port: gateway.port) }
        usleep(200_000)
        #expect(try httpRequest("GET", gateway.base + "/healthz").status == 200)
        #expect(quiet[0].closedByServer(timeoutMs: 2_000))
        #expect(!quiet[2].closedByServer(timeoutMs: 100))
        #expect(gateway.agent.terminate() == 0)
        #expect(gateway.agent.stderr.contains("Closed a connection that had not sent valid credentials"))
    }

    /// Connections that sent valid credentials keep their slots: with all
    /// three taken by them, a newcomer gets 503 — and they are still served.
    @Test func connectionsWithValidCredentialsKeepTheirSlots() throws {
        let gateway = try Gateway()
        func post(_ client: RawClient, _ n: Int) -> String {
            let body = Self.line(String(format: "65f1c2a9e1b2c3d4e5f8%04x", n), device: "K\(n)")
            client.send(
                "POST /ingest/v1/batches HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(Self.apiKey)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            )
            return client.readAnswer(timeoutMs: 5_000)
        }
        let trusted = try (0..<3).map { _ in try RawClient(port: gateway.port) }
        for (i, client) in trusted.enumerated() { #expect(post(client, i).hasPrefix("HTTP/1.1 200 ")) }
        let surplus = try RawClient(port: gateway.port)
        #expect(surplus.readAll(timeoutMs: 5_000).hasPrefix("HTTP/1.1 503 "))
        #expect(post(trusted[0], 10).hasPrefix("HTTP/1.1 200 "))
        #expect(gateway.agent.terminate() == 0)
        #expect(gateway.agent.stderr.contains("Refused a connection: every slot is taken"))
    }

    /// Slowloris (issue 23): 20 clients that trickle heads and reconnect as
    /// soon as they are cut off, against 3 slots, do not keep a client that
    /// sends whole requests out: 45 of 45 of its batches are stored, and a
    /// few tries at most are turned away with 503 or closed before their
    /// request arrived (when every slot holds a connection as new as the
    /// client's, on a loaded machine) and stored when sent again, as an
    /// uploader sends again — as the old server's 503 to all 45 was not.
    @Test func aSlowlorisDoesNotKeepOthersOut() throws {
        let gateway = try Gateway()
        let port = gateway.port
        let running = RunningFlag()
        let attackers = DispatchGroup()
        for _ in 0..<20 {
            attackers.enter()
            Thread.detachNewThread {
                defer { attackers.leave() }
                while running.isSet {
                    guard let client = try? RawClient(port: port) else { continue }
                    var alive = client.send("POST /ingest/v1/batches HTTP/1.1\r\nHost: x\r\n")
                    while alive, running.isSet {
                        usleep(100_000)
                        alive = client.send("X-Slow: 1\r\n") && !client.closedByServer(timeoutMs: 0)
                    }
                }
            }
        }
        usleep(500_000)
        let (stored, attempts) = try Self.sendUntilStored(
            45,
            to: gateway,
            idPrefix: "65f1c2a9e1b2c3d4e5f9",
            device: "L"
        )
        running.clear()
        attackers.wait()
        // Every batch stored; few attempts turned away (503) or closed unanswered (-1).
        #expect(stored == 45, "\(attempts)")
        #expect(attempts.allSatisfy { [200, 503, -1].contains($0) }, "\(attempts)")
        #expect(attempts.filter { $0 != 200 }.count <= 15, "\(attempts)")
        #expect(gateway.waitUntilArchived(45))
        #expect(gateway.agent.terminate() == 0)
    }

    /// Clients behind one NAT (issue 39): one address, shared with 10
    /// clients that open connections, send nothing and reconnect as soon as
    /// they are cut off. The address's share (2) is full of them; a client
    /// there that sends its credentials at once is served — their
    /// connections give way — instead of 26 of 30 requests getting 503.
    @Test func aClientSharingItsAddressWithAFloodIsServed() throws {
        let gateway = try Gateway("max_connections_per_address = 2", maxConnections: 40)
        let port = gateway.port
        let running = RunningFlag()
        let flood = DispatchGroup()
        for _ in 0..<10 {
            flood.enter()
            Thread.detachNewThread {
                defer { flood.leave() }
                while running.isSet {
                    guard let client = try? RawClient(port: port) else { continue }
                    // Until cut off: a 503 comes with a body, then the close.
                    while running.isSet {
                        _ = client.readAll(timeoutMs: 0)
                        if client.closedByServer(timeoutMs: 50) { break }
                    }
                }
            }
        }
        usleep(500_000)
        let (stored, attempts) = try Self.sendUntilStored(
            30,
            to: gateway,
            idPrefix: "65f1c2a9e1b2c3d4e5fa",
            device: "N"
        )
        running.clear()
        flood.wait()
        #expect(stored == 30, "\(attempts)")
        #expect(attempts.filter { $0 != 200 }.count <= 3, "\(attempts)")
        #expect(gateway.waitUntilArchived(30))
        #expect(gateway.agent.terminate() == 0)
        #expect(gateway.agent.stderr.contains("to make room for a new one from its address"))
    }

}

@Suite struct HTTPInputConfigTests {
    @Test func checkConfigNamesWhatAnHTTPInputNeedsAndRefusesItsKeysElsewhere() throws {
        let cases: [(inputs: String, expected: String)] = [
            ("[[inputs]]\nkind = \"http\"", "inputs[0].listen: an http input needs the address to listen on"),
            ("[[inputs]]\nkind = \"http\"\nlisten = \"8480\"", "inputs[0].listen: must be \"host:port\""),
            (
                "[[inputs]]\nkind = \"http\"\nlisten = \":8480\"\nformat = \"csv\"",
                "inputs[0].format: an http input reads NDJSON batches"
            ),
            ("[[inputs]]\nkind = \"stdin\"\nlisten = \":8480\"", "inputs[0].listen: applies only to an http input"),
            ("[[inputs]]\nkind = \"http\"\nlisten = \":8480\"\nmax_connections = 0", "inputs[0].max_connections"),
            // A window that would overflow when turned into milliseconds (it crashed the agent on every batch).
            (
                "[[inputs]]\nkind = \"http\"\nlisten = \":8480\"\ndedup_window_s = 9223372036854775807",
                "inputs[0].dedup_window_s: must be at most 31536000 (365 days)"
            ),
            (
                "[[inputs]]\nkind = \"http\"\nlisten = \":8480\"\nrequest_timeout_ms = 9223372036854775807",
                "inputs[0].request_timeout_ms: must be at most 31536000000 (365 days)"
            ),
        ]
        for (inputs, expected) in cases {
            let fixture = try AgentFixture(inputs: inputs + "\n")
            let result = try fixture.run(["check-config"])
            #expect(result.status == 78, "\(inputs)")
            #expect(result.stderr.contains(expected), "\(inputs) → \(result.stderr)")
        }
        let good = try AgentFixture(inputs: "[[inputs]]\nkind = \"http\"\nlisten = \"[::1]:8480\"\n")
        let result = try good.run(["check-config"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("inputs: http:[::1]:8480 (ndjson, type WeatherSensor)"), "\(result.stdout)")
    }

    @Test func aTakenPortFailsTheStartWithTheAddress() throws {
        let first = try AgentFixture(inputs: "[[inputs]]\nkind = \"http\"\nlisten = \"127.0.0.1:0\"\n")
        let agent = try RunningAgent(
            arguments: ["run", "--config", first.configPath],
            environment: IngestdBinary.environment,
            stdinFile: "/dev/null"
        )
        let address = try #require(first.listenAddress(), "\(agent.stderr)")
        let second = try AgentFixture(inputs: "[[inputs]]\nkind = \"http\"\nlisten = \"\(address)\"\n")
        let result = try second.run(["run"])
        #expect(result.status != 0)
        #expect(
            result.stderr.contains("Cannot listen on \(address): Address already in use"),
            "\(result.stderr.suffix(1000))"
        )
        #expect(agent.terminate() == 0)
    }
}

/// The README's first command ends with scripts/full-loop.sh: readings →
/// the example configuration's agent → a backend ingestd (etc/backend.toml)
/// → its archive. Run here with the binary built beside the tests.
@Suite(.serialized) struct FullLoopScriptTests {
    @Test func theReadmeLoopStoresEveryReadingOnceAndAddsUpAcrossRuns() throws {
        let dir = try TemporaryDirectory()
        let script = repositoryRoot.appendingPathComponent("scripts/full-loop.sh").path
        var environment = IngestdBinary.environment
        environment["INGESTD"] = IngestdBinary.url.path
        environment["LOOP_DIR"] = dir.file("loop")
        environment["LOOP_PORT"] = "0"  // any free port: a backend started from the README may hold 8480
        let first = try runTool("/bin/bash", [script, "5"], environment: environment)
        #expect(first.status == 0, "\(first.output)")
        #expect(first.output.contains("full-loop: stored 5 readings (5 in the archive in all)"), "\(first.output)")
        let second = try runTool("/bin/bash", [script, "7"], environment: environment)
        #expect(second.output.contains("full-loop: stored 7 readings (12 in the archive in all)"), "\(second.output)")
        #expect(
            try sqlite3(
                dir.file("loop/backend/archive.sqlite"),
                "SELECT count(*), count(DISTINCT _id) FROM WeatherSensor"
            ) == "12|12"
        )
        #expect(try runTool("/bin/bash", [script, "five"], environment: environment).status == 2)
    }
}

/// A flag one thread clears and others poll.
private final class RunningFlag: @unchecked Sendable {  // under `lock`
    private let lock = NSLock()
    private var value = true
    var isSet: Bool { lock.withLock { value } }
    func clear() { lock.withLock { value = false } }
}
