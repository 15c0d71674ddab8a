import Foundation
import TestSupport
import Testing

/// A gateway: an agent with an HTTP input (`app_id = "weather"`) on a port
/// chosen before it starts, so it can be killed and started again on the
/// same one, delivering to the sink `upload` configures.
///
///     let gateway = try GatewayAgent(upload: "\n[upload]\nsink = \"sqlite\"\n")
///     try gateway.start()
///     gateway.kill9()
final class GatewayAgent {
    let fixture: AgentFixture
    let port: Int
    var agent: RunningAgent?
    /// Where boxes send their batches.
    var url: String { "http://127.0.0.1:\(port)/ingest/v1/apps/weather/batches" }

    init(upload: String) throws {
        port = try SilentListener().port  // a free port, closed again
        fixture = try AgentFixture(
            upload,
            inputs: """
                [[inputs]]
                kind = "http"
                listen = "127.0.0.1:\(port)"
                app_id = "weather"
                """
        )
    }

    func start() throws {
        agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        #expect(
            eventually { (try? httpRequest("GET", "http://127.0.0.1:\(port)/healthz"))?.status == 200 },
            "gateway on \(port): \(agent?.stderr.suffix(2000) ?? "")"
        )
    }

    /// Kills it with SIGKILL and reaps it.
    func kill9() {
        guard let agent else { return }
        kill(agent.process.processIdentifier, SIGKILL)
        agent.process.waitUntilExit()
        self.agent = nil
    }

    func status() -> [String: Any] { (try? fixture.status()) ?? [:] }
    var accepted: Int { status()["accepted_total"] as? Int ?? 0 }
}
