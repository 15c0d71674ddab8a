import Foundation
import TestSupport
import Testing

/// `[metrics]` through the built binary: /metrics checked by Prometheus's
/// own promtool, /health and /ready as a load balancer sees them.
@Suite struct MetricsEndpointTests {
    static let promtool = "/usr/bin/promtool"

    /// The agent's metrics address, from its log line (`ingest.listen=…` of
    /// "Serving /metrics, /health and /ready"), 10 s at most.
    static func metricsBase(_ agent: RunningAgent) throws -> String {
        var base: String?
        _ = eventually {
            for line in agent.stderr.split(separator: "\n") where line.contains("Serving /metrics") {
                if let range = line.range(of: #"ingest\.listen=\S+"#, options: .regularExpression) {
                    base = "http://" + line[range].dropFirst("ingest.listen=".count)
                }
            }
            return base != nil
        }
        guard let base else { throw ToolFailure("the metrics listener did not start: \(agent.stderr.suffix(2000))") }
        return base
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: promtool), "needs promtool (Debian: prometheus)"))
    func metricsAreWhatPromtoolAcceptsAndCountWhatHappened() throws {
        let fixture = try AgentFixture("[metrics]\nlisten = \"127.0.0.1:0\"\n")
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(reading(1) + "\n" + reading(2) + "\n{bad\n" + #"{"deviceId":"x"}"# + "\n" + reading(3) + "\n")
        let base = try Self.metricsBase(agent)
        #expect(eventually { (try? fixture.status())?["accepted_total"] as? Int == 3 })
        let metrics = try httpRequest("GET", base + "/metrics")
        #expect(metrics.status == 200)
        let dir = try TemporaryDirectory()
        try metrics.text.write(toFile: dir.file("metrics.txt"), atomically: true, encoding: .utf8)
        let check = try runTool("/bin/sh", ["-c", "\(Self.promtool) check metrics < '\(dir.file("metrics.txt"))'"])
        #expect(check.status == 0, "\(check.output)\n\(metrics.text)")
        let lines = Set(metrics.text.split(separator: "\n").map(String.init))
        for expected in [
            "ingestd_accepted_records_total 3",
            "ingestd_queued_records 3",
            #"ingestd_rejected_records_total{reason="malformed_json"} 1"#,
            #"ingestd_rejected_records_total{reason="missing_field"} 1"#,
            #"ingestd_input_lines_read_total{input="stdin"} 5"#,
            #"ingestd_input_rejected_records_total{input="stdin",reason="malformed_json"} 1"#,
            #"ingestd_state{state="idle"} 1"#,
            #"ingestd_state{state="backing_off"} 0"#,
            "# TYPE ingestd_accepted_records_total counter",
            "# TYPE ingestd_queued_records gauge",
        ] {
            #expect(lines.contains(expected), "\(expected) missing from:\n\(metrics.text)")
        }
        #expect(try httpRequest("GET", base + "/health").status == 200)
        #expect(try httpRequest("GET", base + "/ready").status == 200)
        #expect(try httpRequest("GET", base + "/nothing").status == 404)
        #expect(try httpRequest("POST", base + "/metrics", body: Array("x".utf8)).status == 405)
        #expect(agent.terminate() == 0)
    }

    @Test func readyFailsOnceTheBacklogIsOlderThanItsBound() throws {
        // A backend that refuses connections: readings stay queued and age
        // while the uploader backs off (not held, so only their age says it).
        let fixture = try AgentFixture(
            "[metrics]\nlisten = \"127.0.0.1:0\"\nready_max_age_s = 1\n[upload]\nurl = \"http://127.0.0.1:9/ingest/v1/batches\"\n"
        )
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        let base = try Self.metricsBase(agent)
        #expect(try httpRequest("GET", base + "/ready").status == 200, "an empty queue is ready")
        agent.write(reading(1) + "\n")
        var answer = try httpRequest("GET", base + "/ready")
        #expect(
            eventually(timeout: 10) {
                answer = (try? httpRequest("GET", base + "/ready")) ?? answer
                return answer.status == 503
            }
        )
        #expect(answer.text.hasPrefix("not ready: the oldest queued reading is "), "\(answer.text)")
        #expect(answer.text.contains("(ready_max_age_s = 1)"))
        #expect(try httpRequest("GET", base + "/health").status == 200, "an old backlog is not a hang")
        #expect(agent.terminate() == 0)
    }

    @Test func anAgentThatOnlyQueuesStaysReadyHoweverOldItsQueue() throws {
        let fixture = try AgentFixture("[metrics]\nlisten = \"127.0.0.1:0\"\nready_max_age_s = 1\n")
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        let base = try Self.metricsBase(agent)
        agent.write(reading(1) + "\n")
        #expect(eventually { (try? fixture.status())?["oldest_age_seconds"] as? Double ?? 0 > 2 })
        #expect(try httpRequest("GET", base + "/ready").status == 200)
        #expect(agent.terminate() == 0)
    }

    @Test func theMetricsSectionIsCheckedLikeTheOthers() throws {
        let fixture = try AgentFixture("[metrics]\nlisten = \"9464\"\nready_max_age = 5\n")
        let result = try fixture.run(["check-config"])
        #expect(result.status == 78)
        #expect(result.stderr.contains(#"metrics.listen: must be "host:port""#), "\(result.stderr)")
        #expect(
            result.stderr.contains(#"metrics.ready_max_age: unknown key (did you mean "ready_max_age_s"?)"#),
            "\(result.stderr)"
        )
    }
}
