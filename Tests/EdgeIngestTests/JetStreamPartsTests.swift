import Testing

@testable import EdgeIngestCore

/// The JetStream sink's parts that need no server: server URLs, subjects,
/// NKey seeds, PubAck answers, reply subjects.
@Suite struct JetStreamPartsTests {
    @Test func serverURLs() throws {
        #expect(
            try NATSServerAddress.parse("nats://nats-1:4222").get() == .init(host: "nats-1", port: 4222, tls: false)
        )
        #expect(try NATSServerAddress.parse("tls://[::1]:7422").get() == .init(host: "::1", port: 7422, tls: true))
        #expect(try NATSServerAddress.parse("nats://10.0.0.5").get().port == 4222)
        for bad in ["http://x:4222", "nats://user:pass@x:4222", "nats://x:0", "nats://:4222"] {
            #expect(throws: JetStreamError.self, "\(bad)") { try NATSServerAddress.parse(bad).get() }
        }
        #expect(NATSServerAddress(host: "::1", port: 4222, tls: true).description == "tls://[::1]:4222")
    }

    @Test func subjectsKeepValuesInsideOneToken() throws {
        let template = try SubjectTemplate("telemetry.{client_id}.{type}.{deviceId}", for: .nats)
        #expect(template.fields == ["deviceId"])
        let values = ["deviceId": "a.b*c >d"]
        #expect(
            template.render(type: "Weather", clientID: "edge.17") { values[$0] } == "telemetry.edge_17.Weather.a_b_c__d"
        )
        #expect(template.render(type: "Weather", clientID: "e") { _ in nil } == "telemetry.e.Weather._")
        for bad in ["telemetry.*", "telemetry.>", "a..b", ".a", "a b", ""] {
            #expect(throws: SubjectTemplate.Problem.self, "\(bad)") { try SubjectTemplate(bad, for: .nats) }
        }
        // MQTT keeps its own rules.
        let topic = try SubjectTemplate("t/{deviceId}", for: .mqtt)
        #expect(topic.render(type: "W", clientID: "c") { _ in "x/y.z" } == "t/x_y.z")
        #expect(JetStreamSettings.createdSubjects(for: template) == ["telemetry.>"])
        #expect(
            JetStreamSettings.createdSubjects(for: try SubjectTemplate("fixed.subject", for: .nats)) == [
                "fixed.subject"
            ]
        )
        #expect(JetStreamSettings.createdSubjects(for: try SubjectTemplate("{type}.x", for: .nats)) == [">"])
    }

    @Test func subjectMatching() {
        #expect(NATSSubject.matches("telemetry.a.b", filter: "telemetry.>"))
        #expect(!NATSSubject.matches("telemetry", filter: "telemetry.>"))
        #expect(NATSSubject.matches("telemetry.a.b", filter: "telemetry.*.b"))
        #expect(!NATSSubject.matches("telemetry.a.b.c", filter: "telemetry.*.b"))
        #expect(!NATSSubject.matches("elsewhere.a", filter: "telemetry.>"))
        #expect(NATSSubject.matches("x", filter: "x"))
    }

    @Test func nkeySeedsReadBackAndBadOnesAreNamed() throws {
        let key = NATSNKey(rawSeed: Array(0..<32))
        let text = key.seedText
        #expect(text.hasPrefix("SU") && text.count == 58, "\(text)")
        let read = try NATSNKey(seed: text + "\n")
        #expect(read.seed == Array(0..<32))
        let publicKey = try key.publicKey()
        #expect(publicKey.hasPrefix("U") && publicKey.count == 56, "\(publicKey)")
        // A changed character breaks the checksum; an account seed is not a user's.
        var broken = Array(text)
        broken[20] = broken[20] == "A" ? "B" : "A"
        #expect(throws: JetStreamError.self) { try NATSNKey(seed: String(broken)) }
        #expect(throws: JetStreamError.self) { try NATSNKey(seed: "not a seed") }
        // The signature is 64 bytes, base64url without padding (86 characters).
        #expect(try key.sign(Array("nonce".utf8)).signature.count == 86)
    }

    @Test func credentialsFilesAsNscWritesThem() throws {
        let seed = NATSNKey(rawSeed: Array(repeating: 7, count: 32)).seedText
        let file = """
            -----BEGIN NATS USER JWT-----
            eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.payload.signature
            ------END NATS USER JWT------

            ************************* IMPORTANT *************************
            NKEY Seed printed below can be used to sign and prove identity.

            -----BEGIN USER NKEY SEED-----
            \(seed)
            ------END USER NKEY SEED------
            """
        let credentials = try NATSCredentials.fromCredentialsFile(file)
        #expect(credentials.jwt == "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.payload.signature")
        #expect(credentials.nkey?.seed == Array(repeating: 7, count: 32))
        let connect = try credentials.connectOptions(nonce: "abc", name: "edge")
        #expect(connect["jwt"]?.string != nil && connect["sig"]?.string != nil && connect["nkey"] == nil)
        #expect(throws: JetStreamError.self) { try NATSCredentials.fromCredentialsFile("just text") }
        #expect(throws: JetStreamError.self) { try credentials.connectOptions(nonce: nil, name: "edge") }
    }

    @Test func pubAcks() throws {
        #expect(
            try PubAck.read(status: nil, Array(#"{"stream":"T", "seq":1}"#.utf8), stream: "T") == .stored
        )
        #expect(
            try PubAck.read(
                status: nil,
                Array(#"{"stream":"T", "seq":1,"duplicate": true}"#.utf8),
                stream: "T"
            )
                == .duplicate
        )
        // Not from the stream: another subscriber's reply, another stream, a status.
        #expect(try PubAck.read(status: nil, Array("ok".utf8), stream: "T") == .notAPubAck)
        #expect(try PubAck.read(status: nil, [], stream: "T") == .notAPubAck)
        #expect(try PubAck.read(status: nil, Array(#"{"stream":"U", "seq":1}"#.utf8), stream: "T") == .notAPubAck)
        #expect(try PubAck.read(status: nil, Array(#"{"stream":"T", "seq":0}"#.utf8), stream: "T") == .notAPubAck)
        #expect(try PubAck.read(status: 408, [], stream: "T") == .notAPubAck)
        #expect(try PubAck.read(status: nil, Array(#"{"stream":"error", "seq":7}"#.utf8), stream: "error") == .stored)
        #expect(
            try PubAck.read(status: nil, Array(#"{"stream":"T", "domain":"hub", "seq":3}"#.utf8), stream: "T")
                == .stored
        )
        #expect(PubAck.isPlainAck(Array(#"{"stream":"T", "seq":12}"#.utf8), stream: "T"))
        #expect(!PubAck.isPlainAck(Array(#"{"stream":"T", "seq":}"#.utf8), stream: "T"))
        let tooBig = #"{"error":{"code":400,"err_code":10054,"description":"message size exceeds maximum allowed"}}"#
        #expect(try PubAck.read(status: nil, Array(tooBig.utf8), stream: "T") != .stored)
        let wrongStream = #"{"error":{"code":400,"err_code":10060,"description":"expected stream does not match"}}"#
        let held = #expect(throws: JetStreamError.self) {
            try PubAck.read(status: nil, Array(wrongStream.utf8), stream: "T")
        }
        #expect(held?.kind == .configuration)
        let busy = #expect(throws: JetStreamError.self) { try PubAck.read(status: 503, [], stream: "T") }
        #expect(busy?.kind == .transient)
    }

    @Test func replySubjectsMapToTheBatchOnly() {
        #expect(JetStreamSink.index(of: "_INBOX.x.y.105", inbox: "_INBOX.x.y.", base: 100, count: 10) == 5)
        #expect(JetStreamSink.index(of: "_INBOX.x.y.99", inbox: "_INBOX.x.y.", base: 100, count: 10) == nil)
        #expect(JetStreamSink.index(of: "_INBOX.x.y.110", inbox: "_INBOX.x.y.", base: 100, count: 10) == nil)
        #expect(JetStreamSink.index(of: "_INBOX.x.y.api1", inbox: "_INBOX.x.y.", base: 100, count: 10) == nil)
        #expect(JetStreamSink.index(of: "_INBOX.q.105", inbox: "_INBOX.x.y.", base: 100, count: 10) == nil)
    }

    @Test func theIDAndNumbersAreWrittenWithoutStrings() {
        func id(_ text: String) -> String? {
            Array(text.utf8).withUnsafeBytes { raw in
                JetStreamSink.leadingID(raw).map { String(decoding: raw[$0], as: UTF8.self) }
            }
        }
        #expect(id(#"{"_id":"6740a1","x":1}"#) == "6740a1")
        #expect(id(#"{"_id":"a\"b","x":1}"#) == nil, "an escape takes the slow path")
        #expect(id(#"{"x":1,"_id":"6740a1"}"#) == nil)
        #expect(id(#"{"_id":"","x":1}"#) == nil)
        for n in [0, 7, 10, 99, 100, 12_345, Int(Int32.max)] {
            var out: [UInt8] = []
            JetStreamSink.appendDecimal(n, to: &out)
            #expect(String(decoding: out, as: UTF8.self) == String(n))
        }
    }
}
