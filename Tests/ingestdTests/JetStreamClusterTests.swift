import Foundation
import TestSupport
import Testing

/// Exactly once into a 3-node JetStream cluster (R3 stream) through the
/// built binary, with the verdict read from the stream itself by the NATS
/// C client: kill -9 of the agent at random moments, one node killed
/// mid-stream and brought back, the stream's leader killed and restarted.
@Suite(.serialized, .enabled(if: serverTestsEnabled(NATSCluster.executable), "needs nats-server and libnats-dev"))
struct JetStreamClusterTests {
    @Test func killNineNodeLossAndLeaderRestartLoseNothingAndStoreNothingTwice() throws {
        let total = 100_000
        let rounds = 12
        let cluster = try NATSCluster(nodes: 3)
        try cluster.createStream("TELEMETRY", subject: "telemetry.>", replicas: 3)
        let inputs = try TemporaryDirectory()
        let file = inputs.file("readings.ndjson")
        FileManager.default.createFile(atPath: file, contents: nil)
        let fixture = try JetStreamSinkTests.fixture(
            cluster,
            "subject = \"telemetry.{client_id}.{type}\"\nmax_records = 500\ntimeout_ms = 3000",
            inputs: """
                [[inputs]]
                kind = "file"
                paths = ["\(inputs.path)/*.ndjson"]
                poll_interval_ms = 20
                """
        )
        var written = 0
        var generator = SystemRandomNumberGenerator()
        var killedNode: Int?
        var events: [String] = []
        for round in 0..<rounds {
            let chunk = total / rounds + (round < total % rounds ? 1 : 0)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: file))
            try handle.seekToEnd()
            handle.write(Data(JetStreamSinkTests.readings(written..<written + chunk, prefix: "C").utf8))
            try handle.close()
            written += chunk
            let agent = try RunningAgent(
                arguments: ["run", "--config", fixture.configPath],
                environment: IngestdBinary.environment
            )
            usleep(UInt32.random(in: 150_000...900_000, using: &generator))
            switch round {
            case 3:
                // A node that is not the leader dies mid-stream.
                let leader = cluster.leader("TELEMETRY") ?? 0
                let node = (leader + 1) % 3
                cluster.kill(node: node)
                killedNode = node
                events.append("round \(round): node n\(node) killed")
            case 6:
                if let node = killedNode { try cluster.start(node: node) }
                events.append("round \(round): node n\(killedNode ?? -1) back")
            case 8:
                // The stream's leader is killed and restarted at once.
                if let leader = cluster.leader("TELEMETRY") {
                    cluster.kill(node: leader)
                    usleep(300_000)
                    try cluster.start(node: leader)
                    events.append("round \(round): leader n\(leader) killed and restarted")
                }
            default: break
            }
            usleep(UInt32.random(in: 50_000...400_000, using: &generator))
            kill(agent.process.processIdentifier, SIGKILL)
            agent.process.waitUntilExit()
            #expect(agent.process.terminationReason == .uncaughtSignal, "round \(round)")
        }
        #expect(written == total)
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        let drained = eventually(timeout: 120) {
            (try? fixture.status())?["queued_records"] as? Int == 0
                && (try? fixture.status())?["accepted_total"] as? Int == total
        }
        let stderr = agent.stderr
        #expect(agent.terminate() == 0)
        #expect(drained, "\(events)\n\(stderr.suffix(3000))")
        // The verdict, from the stream: each reading once.
        let info = try cluster.info("TELEMETRY")
        let messages = try cluster.messages("TELEMETRY")
        let devices = Set(
            messages.compactMap { message -> Substring? in
                guard let range = message.payload.range(of: #""deviceId":""#) else { return nil }
                return message.payload[range.upperBound...].prefix { $0 != "\"" }
            }
        )
        #expect(info["messages"] == "\(total)", "\(info) \(events)")
        #expect(messages.count == total, "duplicates or losses: \(messages.count) messages of \(total)")
        #expect(devices.count == total, "every reading (its own deviceId) is in the stream: \(devices.count)")
        #expect(Set(messages.map(\.id)).count == total, "each _id once")
        #expect(messages.allSatisfy { $0.id == JetStreamSinkTests.payloadID($0.payload) })
        let status = try fixture.status()
        print(
            "JetStream cluster: \(total) readings, \(rounds) kill -9 rounds, \(events.joined(separator: "; ")); duplicates dropped by the stream in the last run: \(status["upload_duplicates_dropped"] ?? "?")"
        )
    }
}
