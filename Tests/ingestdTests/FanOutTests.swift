import Foundation
import TestSupport
import Testing

/// Several sinks through the built binary (docs/SINKS.md "Several sinks"):
/// two real sinks — the SQLite archive and a real PostgreSQL server — one of
/// them down while the other receives everything; kill -9 while one is
/// down; and failover between two gateways in front of one PostgreSQL.
@Suite(.serialized) struct FanOutTests {
    static let table = """
        CREATE TABLE weather (_id text PRIMARY KEY, "deviceId" text NOT NULL, "temperatureInFahrenheit" double precision,
          "barometricPressureInHg" double precision, "windSpeedInMph" bigint)
        """

    /// `[upload]` into PostgreSQL and `[sinks.archive]` into a SQLite file.
    static func twoSinks(_ server: PostgresServer, inputs: String? = nil) throws -> AgentFixture {
        let upload = """

            [upload]
            sink = "postgresql"
            url = "\(server.url)"
            password_file = "\(server.passwordFile)"
            table = "weather"
            linger_ms = 20
            retry_base_ms = 50
            retry_cap_ms = 300
            shutdown_timeout_ms = 300

            [sinks.archive]
            sink = "sqlite"
            path = "archive.sqlite"
            linger_ms = 20
            """
        if let inputs { return try AgentFixture(upload, inputs: inputs) }
        return try AgentFixture(upload)
    }

    static func archiveCount(_ fixture: AgentFixture) -> String {
        (try? sqlite3(
            fixture.stateDirectory + "/archive.sqlite",
            #"SELECT count(*), count(DISTINCT "deviceId") FROM WeatherSensor;"#
        )) ?? ""
    }

    static func sink(_ status: [String: Any], _ name: String) -> [String: Any]? {
        (status["sinks"] as? [[String: Any]])?.first { $0["name"] as? String == name }
    }

    @Test func aSinkThatIsDownHoldsBackOnlyItselfAndCatchesUpExactlyOnce() throws {
        let server = try PostgresServer()
        try server.psql(Self.table)
        try server.stop()
        let fixture = try Self.twoSinks(server)
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        let total = 20_000
        agent.write((0..<total).map { reading($0 % 40, device: "D\($0)") + "\n" }.joined())
        // PostgreSQL is down: the archive still receives every reading.
        let archived = eventually(timeout: 60) { Self.archiveCount(fixture) == "\(total)|\(total)" }
        #expect(archived, "archive: \(Self.archiveCount(fixture))\n\(agent.stderr.suffix(2000))")
        let whileDown = try fixture.status()
        #expect(Self.sink(whileDown, "upload")?["queuedRecords"] as? Int == total, "\(whileDown)")
        #expect(Self.sink(whileDown, "archive")?["queuedRecords"] as? Int == 0, "\(whileDown)")
        #expect(Self.sink(whileDown, "archive")?["uploaded"] as? Int == total, "\(whileDown)")
        #expect(Self.sink(whileDown, "upload")?["state"] as? String == "backing_off", "\(whileDown)")
        #expect(whileDown["queued_records"] as? Int == total)
        let text = try fixture.run(["status"]).stdout
        #expect(text.contains("sink archive: idle, 0 queued (0 bytes), \(total) uploaded"), "\(text)")
        let stats = try fixture.run(["queue", "stats"]).stdout
        #expect(stats.contains("sink upload: \(total) queued"), "\(stats)")
        #expect(stats.contains("sink archive: 0 queued (0 bytes), \(total) uploaded"), "\(stats)")
        // It comes back: every reading once, and the queue is empty.
        try server.start()
        let delivered = eventually(timeout: 60) {
            (try? server.psql(#"SELECT count(*), count(DISTINCT "deviceId") FROM weather"#)) == "\(total)|\(total)"
                && (try? fixture.status())?["queued_records"] as? Int == 0
        }
        let stderr = agent.stderr
        #expect(agent.terminate() == 0)
        #expect(delivered, "\(stderr.suffix(2000))")
        let status = try fixture.status()
        #expect(status["uploaded_total"] as? Int == total)
        #expect(Self.sink(status, "upload")?["uploaded"] as? Int == total)
        #expect(Self.archiveCount(fixture) == "\(total)|\(total)")
        #expect(stderr.contains("ingest.sink_name=upload"), "the journal says which sink a line is about")
    }

    /// A record PostgreSQL refuses is a dead letter of that sink only: the
    /// archive stores it, and the dead-letter commands say whose it is.
    @Test func aRecordOneSinkRefusesIsThatSinksDeadLetterAlone() throws {
        let server = try PostgresServer()
        try server.psql(
            Self.table.replacingOccurrences(of: "NOT NULL", with: "NOT NULL CHECK (\"deviceId\" <> 'POISON')")
        )
        let fixture = try Self.twoSinks(server)
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write((0..<300).map { reading($0 % 40, device: $0 == 123 ? "POISON" : "P\($0)") + "\n" }.joined())
        let settled = eventually(timeout: 30) {
            (try? fixture.status())?["queued_records"] as? Int == 0
        }
        #expect(agent.terminate() == 0)
        #expect(settled, "\(agent.stderr.suffix(2000))")
        #expect(Self.archiveCount(fixture) == "300|300")
        #expect(try server.psql("SELECT count(*) FROM weather") == "299")
        let status = try fixture.status()
        #expect(Self.sink(status, "upload")?["deadLettered"] as? Int == 1, "\(status)")
        #expect(Self.sink(status, "archive")?["deadLettered"] as? Int == 0, "\(status)")
        // Stored by the archive last, or refused by PostgreSQL last: counted once either way.
        let uploaded = status["uploaded_total"] as? Int ?? -1
        let dead = status["dead_letter_records"] as? Int ?? -1
        #expect(uploaded + dead == 300 && dead <= 1, "\(status)")
        let listed = try fixture.run(["dead-letter", "list"])
        #expect(listed.stdout.contains("1 dead letter") && listed.stdout.contains("sink upload"), "\(listed.stdout)")
        #expect(try fixture.run(["dead-letter", "list", "--sink", "archive"]).stdout.hasPrefix("0 dead letters"))
        let unknown = try fixture.run(["dead-letter", "list", "--sink", "nowhere"])
        #expect(unknown.status == 64 && unknown.stderr.contains("its sinks: upload, archive"), "\(unknown.stderr)")
    }

    /// kill -9 at random moments while PostgreSQL is down and the archive
    /// up: no reading lost for either, none stored twice.
    @Test func killNineWhileOneSinkIsDownLosesNothingForEither() throws {
        let server = try PostgresServer()
        try server.psql(Self.table)
        try server.stop()
        let inputs = try TemporaryDirectory()
        let file = inputs.file("readings.ndjson")
        let fixture = try Self.twoSinks(
            server,
            inputs: """
                [[inputs]]
                kind = "file"
                paths = ["\(inputs.path)/*.ndjson"]
                poll_interval_ms = 20
                """
        )
        FileManager.default.createFile(atPath: file, contents: nil)
        var written = 0
        var generator = SystemRandomNumberGenerator()
        for round in 0..<20 {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
            try handle.seekToEnd()
            let chunk = 1_500
            handle.write(
                Data((written..<written + chunk).map { reading($0 % 40, device: "K\($0)") + "\n" }.joined().utf8)
            )
            try handle.close()
            written += chunk
            let agent = try RunningAgent(
                arguments: ["run", "--config", fixture.configPath],
                environment: IngestdBinary.environment
            )
            usleep(UInt32.random(in: 80_000...450_000, using: &generator))
            kill(agent.process.processIdentifier, SIGKILL)
            agent.process.waitUntilExit()
            #expect(agent.process.terminationReason == .uncaughtSignal, "round \(round)")
        }
        try server.start()
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        let done = eventually(timeout: 90) {
            (try? server.psql(#"SELECT count(*), count(DISTINCT "deviceId") FROM weather"#)) == "\(written)|\(written)"
                && Self.archiveCount(fixture) == "\(written)|\(written)"
                && (try? fixture.status())?["queued_records"] as? Int == 0
        }
        let stderr = agent.stderr
        #expect(agent.terminate() == 0)
        #expect(
            done,
            "postgres \((try? server.psql("SELECT count(*) FROM weather")) ?? "?"), archive \(Self.archiveCount(fixture))\n\(stderr.suffix(3000))"
        )
        let status = try fixture.status()
        // Every reading the file holds was accepted once (file positions
        // commit with the readings), and both sinks have each once.
        #expect(status["accepted_total"] as? Int == written)
        // Each sink's own count: acknowledged once per reading, in the
        // transaction that moved its cursor, whatever was re-sent.
        #expect(Self.sink(status, "upload")?["uploaded"] as? Int == written, "\(status)")
        #expect(Self.sink(status, "archive")?["uploaded"] as? Int == written, "\(status)")
        #expect(Self.archiveCount(fixture) == "\(written)|\(written)")
    }

    /// A gateway in front of PostgreSQL.
    static func gateway(_ server: PostgresServer) throws -> GatewayAgent {
        try GatewayAgent(
            upload: """

                [upload]
                sink = "postgresql"
                url = "\(server.url)"
                password_file = "\(server.passwordFile)"
                table = "weather"
                linger_ms = 20
                """
        )
    }

    @Test func thePrimaryGatewayKilledMidStreamTheSecondaryTakesOverAndThePrimaryComesBack() throws {
        let server = try PostgresServer()
        try server.psql(Self.table)
        let primary = try Self.gateway(server)
        let secondary = try Self.gateway(server)
        try primary.start()
        try secondary.start()
        let box = try AgentFixture(
            """

            [upload]
            urls = ["\(primary.url)", "\(secondary.url)"]
            failover_after = 2
            failback_s = 10
            max_records = 200
            linger_ms = 20
            retry_base_ms = 20
            retry_cap_ms = 100
            """
        )
        let agent = try RunningAgent(
            arguments: ["run", "--config", box.configPath],
            environment: IngestdBinary.environment
        )
        let first = 30_000
        // Written in parts, so the stream is still going when the primary dies.
        for part in 0..<10 {
            agent.write((part * 3_000..<(part + 1) * 3_000).map { reading($0 % 40, device: "F\($0)") + "\n" }.joined())
            if part == 2 {
                #expect(eventually(timeout: 30) { primary.accepted > 2_000 }, "\(agent.stderr.suffix(2000))")
                primary.kill9()
            }
        }
        // Everything reaches a gateway (those the primary answered before
        // it died wait in its queue for its return).
        let failedOver = eventually(timeout: 60) {
            (try? box.status())?["queued_records"] as? Int == 0 && secondary.accepted > 0
        }
        #expect(failedOver, "\(agent.stderr.suffix(3000))")
        #expect(agent.stderr.contains("Upload failover: the next upstream takes over"), "\(agent.stderr.suffix(2000))")
        // The primary comes back; after failback_s the box uses it again.
        try primary.start()
        let before = primary.accepted
        let second = 2_000
        var sent = first
        let backOnPrimary = eventually(timeout: 40) {
            agent.write((sent..<sent + 100).map { reading($0 % 40, device: "F\($0)") + "\n" }.joined())
            sent += 100
            usleep(200_000)
            return primary.accepted > before + second
        }
        #expect(backOnPrimary, "\(agent.stderr.suffix(2000))")
        #expect(agent.stderr.contains("Uploads go to the first upstream again"), "\(agent.stderr.suffix(2000))")
        let all = eventually(timeout: 60) {
            (try? server.psql(#"SELECT count(*), count(DISTINCT "deviceId") FROM weather"#)) == "\(sent)|\(sent)"
                && (try? box.status())?["queued_records"] as? Int == 0
        }
        let stderr = agent.stderr
        #expect(agent.terminate() == 0)
        #expect(
            all,
            "postgres: \((try? server.psql("SELECT count(*) FROM weather")) ?? "?") of \(sent)\n\(stderr.suffix(3000))"
        )
        // 0 lost, 0 stored twice: one row per reading (the table's key is
        // _id, and every reading has its own device name).
        #expect(try server.psql(#"SELECT count(*) - count(DISTINCT _id) FROM weather"#) == "0")
    }
}
