import Foundation
import TestSupport
import Testing

/// Gateways forwarding into JetStream (docs/FLEET.md): two gateway agents
/// behind a TCP balancer (nginx's stream module), each with sink =
/// "jetstream" into one 3-node R3 stream. One gateway is killed mid-stream;
/// the boxes reach the other through the balancer and re-send what the dead
/// one never answered, so some readings arrive through both. The stream,
/// deduplicating by the boxes' own `_id`s, keeps each once.
@Suite(
    .serialized,
    .enabled(
        if: serverTestsEnabled(NATSCluster.executable) && serverTestsEnabled(NginxBalancer.executable),
        "needs nats-server, libnats-dev, nginx-light and libnginx-mod-stream"
    )
)
struct JetStreamGatewayTests {
    /// A gateway forwarding into the stream.
    static func gateway(_ cluster: NATSCluster) throws -> GatewayAgent {
        try GatewayAgent(
            upload: JetStreamSinkTests.upload(cluster, "subject = \"telemetry.{type}\"\nmax_records = 1000")
        )
    }

    @Test func aGatewayKilledMidStreamLeavesEachReadingOnceInTheStream() throws {
        let cluster = try NATSCluster(nodes: 3)
        try cluster.createStream("TELEMETRY", subject: "telemetry.>", replicas: 3)
        let first = try Self.gateway(cluster)
        let second = try Self.gateway(cluster)
        try first.start()
        try second.start()
        let balancer = try NginxBalancer(upstreams: [first.port, second.port])
        let boxes = try (0..<2).map { _ in
            try AgentFixture(
                """

                [upload]
                url = "http://127.0.0.1:\(balancer.port)/ingest/v1/apps/weather/batches"
                max_records = 250
                linger_ms = 20
                retry_base_ms = 20
                retry_cap_ms = 200
                timeout_ms = 2000
                """
            )
        }
        let agents = try boxes.map {
            try RunningAgent(arguments: ["run", "--config", $0.configPath], environment: IngestdBinary.environment)
        }
        let perBox = 25_000
        let started = Date()
        for part in 0..<10 {
            for (n, agent) in agents.enumerated() {
                let range = (n * perBox + part * perBox / 10)..<(n * perBox + (part + 1) * perBox / 10)
                agent.write(JetStreamSinkTests.readings(range, prefix: "G"))
            }
            if part == 3 {
                #expect(
                    eventually(timeout: 30) { first.accepted > 2_000 && second.accepted > 2_000 },
                    "both gateways take readings through the balancer: \(first.accepted), \(second.accepted)"
                )
                first.kill9()
            }
            usleep(100_000)
        }
        let total = 2 * perBox
        let boxesDone = eventually(timeout: 90) {
            boxes.allSatisfy { (try? $0.status())?["queued_records"] as? Int == 0 }
        }
        #expect(boxesDone, "\(agents[0].stderr.suffix(2000))")
        let failedOver = Date().timeIntervalSince(started)
        // The dead gateway comes back and forwards what it had accepted.
        try first.start()
        let inStream = eventually(timeout: 90) {
            (try? cluster.info("TELEMETRY"))?["messages"] == "\(total)"
                && first.status()["queued_records"] as? Int == 0 && second.status()["queued_records"] as? Int == 0
        }
        let all = Date().timeIntervalSince(started)
        for agent in agents { #expect(agent.terminate() == 0) }
        let gatewayStatuses = [first.status(), second.status()]
        first.agent.map { _ = $0.terminate() }
        second.agent.map { _ = $0.terminate() }
        let messages = try cluster.messages("TELEMETRY")
        let ids = Set(messages.map(\.id))
        #expect(
            inStream,
            "stream: \(messages.count) of \(total); gateways \(gatewayStatuses.map { $0["queued_records"] ?? "?" })"
        )
        #expect(messages.count == total, "0 lost, 0 duplicates: \(messages.count) of \(total)")
        #expect(ids.count == total)
        // The boxes' own _ids reached the stream, through either gateway.
        let accepted = gatewayStatuses.map { $0["accepted_total"] as? Int ?? 0 }.reduce(0, +)
        let dropped = gatewayStatuses.map { $0["upload_duplicates_dropped"] as? Int ?? 0 }.reduce(0, +)
        #expect(accepted >= total, "every reading reached a gateway: \(accepted)")
        print(
            "JetStream via 2 gateways behind nginx: \(total) readings from 2 boxes, gateway 1 killed mid-stream; boxes drained in \(Int(failedOver)) s, stream complete in \(Int(all)) s; gateways accepted \(accepted) (\(accepted - total) through both), the stream dropped \(dropped) re-sent after the restart; \(messages.count) messages, \(ids.count) distinct _ids"
        )
    }
}
