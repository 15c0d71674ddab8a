import EdgeIngestCore
import IngestGateway
import Logging
import ServiceLifecycle

/// Serves `[metrics]`: `/metrics` (Prometheus text format: every counter
/// and gauge of the status, from ``AgentStatus/fields``), `/health`
/// (liveness: 200 unless an input or the uploader is wedged) and `/ready`
/// (200 while readings are being delivered: uploading not held, no input
/// stuck on a full disk, the oldest queued reading younger than
/// `upload.unhealthy_after_s`: the problem `ingestd status` reports). Each answer is computed when asked, from the same
/// sources as status.json. Binds when the agent starts (a taken port fails
/// the start), answers until graceful shutdown.
struct MetricsService: Service {
    let server: HTTPServer
    let logger: Logger
    let idleMilliseconds: Int32

    init(settings: MetricsSettings, status: StatusService, idleMilliseconds: Int32, logger: Logger) throws {
        let handler = MetricsHandler(status: status)
        var limits = HTTPLimits()
        limits.maxBodyBytes = 1024  // scrapes and probes send no body
        server = try HTTPServer(
            address: settings.listen,
            limits: limits,
            maxConnections: 8,
            handler: handler,
            logger: logger
        )
        self.logger = logger
        self.idleMilliseconds = idleMilliseconds
        logger.info(
            "Serving /metrics, /health and /ready",
            metadata: ["ingest.listen": "\(server.boundAddress)"]
        )
    }

    func run() async throws {
        try await runBlockingLoop { [server, idleMilliseconds] stop in
            server.serve(stop: stop, idleMilliseconds: idleMilliseconds) {}
        }
    }
}

/// The answers of ``MetricsService``.
struct MetricsHandler: HTTPHandler {
    let status: StatusService

    func respond(to request: HTTPRequest, peer: String) -> HTTPServerResponse {
        guard request.method == "GET" else {
            return .text(405, "only GET is served here\n", headers: [("Allow", "GET")])
        }
        switch request.path {
        case "/metrics":
            return .text(
                200,
                status.liveStatus().prometheusText,
                contentType: "text/plain; version=0.0.4; charset=utf-8"
            )
        case "/health":
            if let wedged = status.wedgedReason() { return .text(503, "unhealthy: \(wedged)\n") }
            return .text(200, "ok\n")
        case "/ready":
            let live = status.liveStatus()
            // With several sinks, what each holds.
            let sinks = (live.sinks ?? []).map { $0.textLine + "\n" }.joined()
            if let reason = Self.notReady(live) {
                return .text(503, "not ready: \(reason)\n" + sinks)
            }
            return .text(200, "ready\n" + sinks)
        default:
            return .text(404, "not found: /metrics, /health and /ready are served here\n")
        }
    }

    /// Why the agent is not delivering, or nil when it is: the status's
    /// problem (``StatusService/deliveryProblem(_:)`` among them).
    static func notReady(_ status: AgentStatus) -> String? {
        if status.state == .waitingForUser || (status.state == .error && status.uploadReason != nil) {
            return "uploading is held: \(status.uploadReason ?? status.state.rawValue)"
        }
        return status.problem
    }
}
