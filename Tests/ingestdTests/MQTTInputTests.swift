import Foundation
import TestSupport
import Testing

/// `kind = "mqtt"` through the built binary, subscribed to a real mosquitto
/// (Debian's, started by the test), fed by `mosquitto_pub`: a message is
/// acknowledged only once its readings are committed, the session outlives
/// the agent, and kill -9 loses nothing the broker accepted.
@Suite(.enabled(if: serverTestsEnabled(MosquittoBroker.executable), "needs mosquitto and mosquitto-clients"))
struct MQTTInputTests {
    /// An agent with one MQTT input on `port` (more input keys in `input`).
    static func agent(port: Int, _ input: String, upload: String = "", scheme: String = "mqtt") throws -> AgentFixture {
        try AgentFixture(
            upload,
            inputs: """
                [[inputs]]
                kind = "mqtt"
                url = "\(scheme)://127.0.0.1:\(port)"
                client_id = "agent-\(UUID().uuidString.prefix(8))"
                connect_timeout_ms = 2000
                \(input)
                """
        )
    }

    /// Publishes `message` to `topic` at QoS 1 (`mosquitto_pub`, MQTT 5); true when the broker acknowledged it.
    @discardableResult
    static func publish(_ broker: MosquittoBroker, _ topic: String, _ message: String) throws -> Bool {
        let result = try runTool(
            "/usr/bin/mosquitto_pub",
            ["-h", "127.0.0.1", "-p", "\(broker.plainPort)", "-q", "1", "-V", "mqttv5", "-t", topic, "-m", message]
        )
        return result.status == 0
    }

    /// A WeatherSensor reading numbered `n`, with its own `_id` (`65` and `n` in hex) and device `S<n>`.
    static func numbered(_ n: Int) -> String {
        let id = "65" + String(repeating: "0", count: 22 - String(n, radix: 16).count) + String(n, radix: 16)
        return
            #"{"_id":"\#(id)","deviceId":"S\#(n)","temperatureInFahrenheit":66.7,"barometricPressureInHg":29.65,"windSpeedInMph":\#(n % 40)}"#
    }

    static func inputStatus(_ fixture: AgentFixture) -> [String: Any]? {
        ((try? fixture.status())?["inputs"] as? [[String: Any]])?.first
    }

    /// Waits until the running agent's input has read `lines` lines.
    static func waitForLines(_ fixture: AgentFixture, _ lines: Int, timeout: Double = 20) -> Bool {
        eventually(timeout: timeout) { (inputStatus(fixture)?["linesRead"] as? Int ?? 0) >= lines }
    }

    /// Starts the agent and waits until its subscription works (a probe reading, `S0`, is committed).
    static func start(_ fixture: AgentFixture, broker: MosquittoBroker, topic: String) throws -> RunningAgent {
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        let probed = eventually(timeout: 20) {
            try? publish(broker, topic, numbered(0))
            return (inputStatus(fixture)?["accepted"] as? Int ?? 0) >= 1
        }
        #expect(probed, "the agent did not subscribe: \(agent.stderr.suffix(2000))")
        return agent
    }

    @Test func readingsComeFromPayloadsAndTopicsAndRefusalsAreCounted() throws {
        let broker = try MosquittoBroker()
        let fixture = try Self.agent(port: broker.port, #"types_from_topic = "sensors/{type}/#""#)
        let agent = try Self.start(fixture, broker: broker, topic: "sensors/WeatherSensor/probe")
        // One reading, typed by its topic.
        try Self.publish(broker, "sensors/WeatherSensor/WX1", reading(1, device: "T1"))
        // Two NDJSON lines in one message, the last without its newline.
        try Self.publish(
            broker,
            "sensors/WeatherSensor/WX2",
            reading(2, device: "T2") + "\n" + reading(3, device: "T3")
        )
        // A topic naming an undeclared type, and a reading missing a field: refused, counted, acknowledged.
        try Self.publish(broker, "sensors/Humidity/WX3", reading(4, device: "T4"))
        try Self.publish(broker, "sensors/WeatherSensor/WX4", #"{"deviceId":"T5"}"#)
        #expect(Self.waitForLines(fixture, 6), "\(agent.stderr.suffix(2000))")
        #expect(agent.terminate() == 0)
        let queued = try fixture.queuedLines()
        let devices = Set(FileInputTests.devices(queued))
        #expect(devices == ["S0", "T1", "T2", "T3"], "\(queued)")
        // The probe may have gone out more than once: its repeats are refused as duplicate_id.
        let rejects = try fixture.rejects()
        let probeRepeats = rejects.filter { $0["reason"] as? String == "duplicate_id" }.count
        #expect(
            rejects.compactMap { $0["reason"] as? String }.filter { $0 != "duplicate_id" }.sorted() == [
                "missing_field", "unknown_type",
            ]
        )
        let unknown = try #require(rejects.first { $0["reason"] as? String == "unknown_type" })
        #expect("\(unknown["message"] ?? "")".contains("types_from_topic) \"Humidity\" is not declared"), "\(unknown)")
        let status = try fixture.status()
        #expect(status["accepted_total"] as? Int == 4, "\(queued)")
        #expect(status["rejected_total"] as? Int == 2 + probeRepeats)
        // Acknowledged: a new agent on the same session gets only what is new.
        let again = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        #expect(
            eventually(timeout: 20) {
                try? Self.publish(broker, "sensors/WeatherSensor/probe", Self.numbered(99))
                return ((try? fixture.status())?["accepted_total"] as? Int ?? 0) >= 5
            },
            "\(again.stderr.suffix(2000))"
        )
        #expect(again.terminate() == 0)
        #expect(try fixture.queuedLines().count == 5)
        #expect(try fixture.status()["rejected_total"] as? Int == 2 + probeRepeats)
    }

    @Test func topicTypesGiveEachSubscriptionItsType() throws {
        let broker = try MosquittoBroker()
        let fixture = try Self.agent(
            port: broker.port,
            """
            topics = ["wx/#", "hum/#"]
            topic_types = { "hum/+/room" = "Humidity" }
            type = "WeatherSensor"
            """,
            upload: "[types.Humidity]\nroom = \"string\"\nrelativeHumidity = \"double\"\n"
        )
        let agent = try Self.start(fixture, broker: broker, topic: "wx/probe")
        try Self.publish(broker, "hum/3/room", #"{"room":"lab","relativeHumidity":41.5}"#)
        try Self.publish(broker, "wx/3", reading(3, device: "W3"))
        // Not under hum/+/room: the input's type, which this reading does not fit.
        try Self.publish(broker, "hum/3/attic", #"{"room":"attic","relativeHumidity":40.0}"#)
        #expect(
            eventually { ((try? fixture.status())?["rejected_total"] as? Int ?? 0) >= 1 },
            "\(agent.stderr.suffix(2000))"
        )
        #expect(agent.terminate() == 0)
        let status = try fixture.status()
        #expect(status["accepted_total"] as? Int == 3, "\(status) \((try? fixture.rejects()) ?? [])")
        #expect(status["rejected_total"] as? Int == 1, "\(status)")
    }

    @Test func whatIsPublishedWhileTheAgentIsDownArrivesWhenItComesBack() throws {
        let broker = try MosquittoBroker()
        let fixture = try Self.agent(port: broker.port, #"topics = ["plant/#"]"#)
        let agent = try Self.start(fixture, broker: broker, topic: "plant/probe")
        #expect(agent.terminate() == 0)
        // The session is kept: QoS 1 messages published now wait at the broker.
        for n in 1...50 { try Self.publish(broker, "plant/line\(n % 3)", Self.numbered(n)) }
        let back = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        #expect(Self.waitForLines(fixture, 50), "\(back.stderr.suffix(2000))")
        #expect(back.terminate() == 0)
        let devices = FileInputTests.devices(try fixture.queuedLines())
        #expect(Set(devices) == Set((0...50).map { "S\($0)" }))
        #expect(devices.count == 51)
    }

    /// Issue 25's proof: 100,000 numbered readings (each with its own `_id`)
    /// published at QoS 1 while the agent is killed with SIGKILL at a random
    /// moment of each of 10 rounds, and the broker restarted once: every
    /// reading reaches the receiver, none under two `_id`s, and the
    /// agent's counters add up (each accepted once; repeats refused as
    /// `duplicate_id`). The broker keeps the session and its queue (no
    /// limit on queued messages, as docs/INPUTS.md asks of a broker).
    @Test func killedAtRandomMomentsWithABrokerRestartNothingTheBrokerAcceptedIsLost() throws {
        let total = 100_000
        let rounds = 10
        let broker = try MosquittoBroker(persistent: true, extraConfig: "max_queued_messages 0\n")
        let backend = try TestBackend(["--key-field", "deviceId"])
        let fixture = try Self.agent(
            port: broker.port,
            "topics = [\"load/#\"]",
            upload: "[upload]\nurl = \"\(backend.url)\"\nlinger_ms = 10\n"
        )
        var agent = try Self.start(fixture, broker: broker, topic: "load/probe")
        let seed = UInt64(Date().timeIntervalSince1970)
        var random = SplitMix64(seed: seed)  // the kill moments: the seed is in the messages below
        let perRound = total / rounds
        var killsWhilePublishing = 0
        for round in 0..<rounds {
            let lines = fixture.dir.file("round-\(round).ndjson")
            try (1...perRound).map { Self.numbered(round * perRound + $0) + "\n" }.joined()
                .write(toFile: lines, atomically: true, encoding: .utf8)
            let publisher = Process()
            publisher.executableURL = URL(fileURLWithPath: "/usr/bin/mosquitto_pub")
            publisher.arguments = [
                "-h", "127.0.0.1", "-p", "\(broker.plainPort)", "-q", "1", "-V", "mqttv5", "-t", "load/r\(round)", "-l",
            ]
            publisher.standardInput = FileHandle(forReadingAtPath: lines)
            try publisher.run()
            // Kill the agent at a random moment while the round is published and taken.
            usleep(UInt32.random(in: 0..<400_000, using: &random))
            if publisher.isRunning { killsWhilePublishing += 1 }
            kill(agent.process.processIdentifier, SIGKILL)
            agent.process.waitUntilExit()
            usleep(UInt32.random(in: 0..<200_000, using: &random))
            agent = try RunningAgent(
                arguments: ["run", "--config", fixture.configPath],
                environment: IngestdBinary.environment
            )
            publisher.waitUntilExit()
            #expect(publisher.terminationStatus == 0, "round \(round): the broker did not accept every message")
            if round == rounds / 2 {
                // A graceful broker restart: its sessions and queued messages are saved and loaded.
                broker.stop()
                try broker.start()
            }
        }
        // Killed in the stream, not only between rounds (all ten missing it is ~1 in a million).
        #expect(killsWhilePublishing > 0, "seed \(seed)")
        let unique = try backend.waitForUnique(total + 1, timeout: 180)
        #expect(unique == total + 1, "seed \(seed): \(agent.stderr.suffix(3000))")
        let stats = try backend.stats()
        #expect(stats["content_unique"] as? Int == total + 1, "seed \(seed): every reading S0...S\(total) arrived")
        #expect(stats["content_duplicates"] as? Int == 0, "seed \(seed): no reading under two _ids")
        #expect(stats["content_min"] as? Int == 0)
        #expect(stats["content_max"] as? Int == total)
        #expect(agent.terminate() == 0)
        let status = try fixture.status()
        #expect(status["accepted_total"] as? Int == total + 1, "seed \(seed): each reading accepted once")
        let byReason = status["rejected_by_reason"] as? [String: Int] ?? [:]
        #expect(Set(byReason.keys).isSubset(of: ["duplicate_id"]), "only repeats are refused: \(byReason)")
        #expect(status["rejected_total"] as? Int == byReason["duplicate_id"] ?? 0)
        #expect(status["queued_records"] as? Int == 0)
    }

    @Test func csvMessagesCarryTheirHeaderAndOversizedMessagesAreRefusedWhole() throws {
        let broker = try MosquittoBroker()
        let fixture = try Self.agent(
            port: broker.port,
            "topics = [\"csv/#\"]\nformat = \"csv\"\nmax_message_bytes = 2048"
        )
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        let header = "deviceId,temperatureInFahrenheit,barometricPressureInHg,windSpeedInMph\n"
        // Subscribed once a first message goes through.
        #expect(
            eventually(timeout: 20) {
                try? Self.publish(broker, "csv/a", header + "C0,70.1,29.9,3")
                return (Self.inputStatus(fixture)?["accepted"] as? Int ?? 0) >= 1
            },
            "\(agent.stderr.suffix(2000))"
        )
        try Self.publish(broker, "csv/b", header + "C1,70.1,29.9,3\nC2,71.5,29.8,4\n")
        try Self.publish(broker, "csv/c", header + String(repeating: "C9,70.1,29.9,3\n", count: 300))
        // Over max_message_bytes and over what is ever buffered (the limit + 70 kB): cut, refused, acknowledged.
        let huge = fixture.dir.file("huge.csv")
        try (header + String(repeating: "C8,70.1,29.9,3\n", count: 8_000))
            .write(toFile: huge, atomically: true, encoding: .utf8)
        _ = try runTool(
            "/usr/bin/mosquitto_pub",
            ["-h", "127.0.0.1", "-p", "\(broker.plainPort)", "-q", "1", "-V", "mqttv5", "-t", "csv/huge", "-f", huge]
        )
        try Self.publish(broker, "csv/d", header + "C3,72.0,29.7,5")
        #expect(
            eventually { (Self.inputStatus(fixture)?["accepted"] as? Int ?? 0) >= 4 },
            "\(agent.stderr.suffix(2000))"
        )
        #expect(agent.terminate() == 0)
        let devices = Set(FileInputTests.devices(try fixture.queuedLines()))
        #expect(devices.isSuperset(of: ["C1", "C2", "C3"]) && !devices.contains("C9") && !devices.contains("C8"))
        let rejects = try fixture.rejects()
        let tooLarge = rejects.filter { $0["reason"] as? String == "message_too_large" }
        #expect(tooLarge.count == 2, "\(rejects)")
        #expect(tooLarge.allSatisfy { "\($0["message"] ?? "")".contains("max_message_bytes of 2048") }, "\(tooLarge)")
        #expect(tooLarge.contains { "\($0["message"] ?? "")".contains("'csv/huge'") }, "\(tooLarge)")
        #expect(!agent.stderr.contains("C9,70.1"), "no payload in the journal")
    }

    @Test func refusedCredentialsAreSaidOnceAndTheAgentKeepsRunning() throws {
        let broker = try MosquittoBroker(users: [("edge", "right password")])
        let fixture = try Self.agent(
            port: broker.port,
            "topics = [\"x/#\"]\nusername = \"edge\"\npassword_file = \"PASSWORD\""
        )
        let passwordFile = fixture.dir.file("password")
        try "wrong password\n".write(toFile: passwordFile, atomically: true, encoding: .utf8)
        chmod(passwordFile, 0o600)
        let text = try String(contentsOfFile: fixture.configPath, encoding: .utf8)
        try text.replacingOccurrences(of: "PASSWORD", with: passwordFile)
            .write(toFile: fixture.configPath, atomically: true, encoding: .utf8)
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        #expect(
            eventually {
                "\(Self.inputStatus(fixture)?["problem"] ?? "")".contains("refused the connection")
            },
            "\(agent.stderr.suffix(2000))"
        )
        Thread.sleep(forTimeInterval: 1)
        #expect(agent.process.isRunning)
        #expect(agent.terminate() == 0)
        let said = agent.stderr
        #expect(said.components(separatedBy: "The MQTT broker cannot be used").count == 2, "once: \(said)")
        #expect(said.contains("retrying every 60 s"))
        #expect(!said.contains("wrong password"))
    }

    @Test(.enabled(if: TLSUploadTests.opensslAvailable))
    func mqttsWithTheTestCAAndAClientCertificateSubscribes() throws {
        let pki = try TestPKI()
        let broker = try MosquittoBroker(
            tls: pki.brokerTLS(requireClientCertificate: true)
        )
        let fixture = try Self.agent(
            port: broker.port,
            """
            topics = ["secure/#"]
            ca_file = "\(pki.ca)"
            client_certificate = "\(pki.clientCert)"
            client_key = "\(pki.clientKey)"
            """,
            scheme: "mqtts"
        )
        let agent = try Self.start(fixture, broker: broker, topic: "secure/probe")
        for n in 1...20 { try Self.publish(broker, "secure/t", Self.numbered(n)) }
        #expect(Self.waitForLines(fixture, 21), "\(agent.stderr.suffix(2000))")
        #expect(agent.terminate() == 0)
        #expect(try fixture.queuedLines().count == 21)

        // A CA that did not sign the broker's certificate: the handshake is refused, and said so.
        let otherPKI = try TestPKI()
        let wrongCA = try Self.agent(
            port: broker.port,
            """
            topics = ["secure/#"]
            ca_file = "\(otherPKI.ca)"
            client_certificate = "\(pki.clientCert)"
            client_key = "\(pki.clientKey)"
            """,
            scheme: "mqtts"
        )
        let refused = try RunningAgent(
            arguments: ["run", "--config", wrongCA.configPath],
            environment: IngestdBinary.environment
        )
        #expect(
            eventually { "\(Self.inputStatus(wrongCA)?["problem"] ?? "")".contains("certificate") },
            "\(refused.stderr.suffix(2000))"
        )
        #expect(refused.terminate() == 0)
    }

    /// MQTT 3.1.1 over TLS, and a broker that dies and comes back: the
    /// input says so once, reconnects, subscribes again and goes on.
    @Test(.enabled(if: TLSUploadTests.opensslAvailable))
    func version3OverTLSReconnectsAfterTheBrokerDies() throws {
        let pki = try TestPKI()
        let broker = try MosquittoBroker(
            tls: pki.brokerTLS(requireClientCertificate: false)
        )
        let fixture = try Self.agent(
            port: broker.port,
            """
            topics = ["v3/#"]
            mqtt_version = "3.1.1"
            keepalive_s = 5
            ca_file = "\(pki.ca)"
            """,
            scheme: "mqtts"
        )
        let agent = try Self.start(fixture, broker: broker, topic: "v3/probe")
        broker.kill()
        #expect(
            eventually { (Self.inputStatus(fixture)?["disconnected"] as? Bool) == true },
            "\(agent.stderr.suffix(2000))"
        )
        try broker.start()
        // Not persistent: the session is gone, so only what comes after the resubscription counts.
        #expect(
            eventually(timeout: 30) {
                try? Self.publish(broker, "v3/after", Self.numbered(7))
                return ((try? fixture.status())?["accepted_total"] as? Int ?? 0) >= 2
            },
            "\(agent.stderr.suffix(2000))"
        )
        #expect(agent.process.isRunning)
        #expect(agent.terminate() == 0)
        let said = agent.stderr
        #expect(said.components(separatedBy: "The MQTT broker cannot be used").count == 2, "once: \(said)")
        #expect(said.contains("no longer had this input's session"), "the lost session is said: \(said)")
        #expect(Set(FileInputTests.devices(try fixture.queuedLines())) == ["S0", "S7"])
    }

    @Test func checkConfigRefusesBadTopicsAndKeysOfOtherKinds() throws {
        let cases: [(String, String)] = [
            ("topics = [\"a/#/b\"]", "'#' must be a whole level and the last one"),
            ("types_from_topic = \"sensors/+/#\"", "exactly one level written {type}"),
            ("topics = [\"other/#\"]\ntypes_from_topic = \"sensors/{type}\"", "none of these filters covers"),
            ("topics = [\"a\"]\nurl = \"http://x\"", "must start with mqtt:// or mqtts://"),
            ("topics = [\"a\"]\nca_file = \"/etc/hostname\"", "applies only to an mqtts:// url"),
            ("", "an mqtt input needs topics"),
            ("topics = [\"a\"]\nmqtt_version = \"4\"", "must be \"5\" (the default) or \"3.1.1\""),
            ("topic_types = { \"a/#\" = \"Nope\" }", "names no declared type: declare [types.Nope]"),
            ("topics = [\"a/+/c\", \"a/b/+\"]", "\"a/+/c\" and \"a/b/+\" overlap"),
            ("topic_types = { \"a/#/b\" = \"WeatherSensor\" }", "the keys of topic_types are topic filters"),
            (
                "topics = [\"a\"]\n[[inputs]]\nkind = \"mqtt\"\ntopics = [\"b\"]",
                "is input 'mqtt:a's client id on the same broker too",
            ),
        ]
        for (keys, message) in cases {
            let fixture = try AgentFixture(inputs: "[[inputs]]\nkind = \"mqtt\"\n\(keys)\n")
            let result = try fixture.run(["check-config"])
            #expect(result.status == 78, "\(keys)")
            #expect(result.stderr.contains(message), "\(keys): \(result.stderr)")
        }
        // A good one is summed up with its broker and session, never its password.
        let good = try AgentFixture(inputs: "[[inputs]]\nkind = \"mqtt\"\ntopics = [\"a/#\"]\n")
        let summary = try good.run(["check-config"])
        #expect(summary.status == 0, "\(summary.stderr)")
        #expect(
            summary.stdout.contains("broker mqtt://127.0.0.1:1883, client id ingestd-")
                && summary.stdout.contains("session 604800 s, MQTT 5, password none"),
            "\(summary.stdout)"
        )
        let stdin = try AgentFixture(inputs: "[[inputs]]\nkind = \"stdin\"\ntopics = [\"a\"]\n")
        let result = try stdin.run(["check-config"])
        #expect(result.stderr.contains("topics: applies only to an mqtt input"), "\(result.stderr)")
    }
}

extension TestPKI {
    /// The broker's TLS files from this PKI (the server certificate names 127.0.0.1).
    func brokerTLS(requireClientCertificate: Bool) -> MosquittoBroker.TLSFiles {
        .init(ca: ca, certificate: serverCert, key: serverKey, requireClientCertificate: requireClientCertificate)
    }
}
