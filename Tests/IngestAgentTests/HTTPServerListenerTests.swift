import EdgeIngestCore
import Logging
import Testing

@testable import IngestAgent

#if canImport(Glibc)
import Glibc
#endif

/// A stopped server lets go of its port when `serve` returns, not when the
/// object happens to be freed: after a reload the next run binds the same
/// port at once (a reload with `[metrics]` died with "Address already in
/// use" under a real systemd, issue 38).
@Suite struct HTTPServerListenerTests {
    struct Nothing: HTTPHandler {
        func respond(to request: HTTPRequest, peer: String) -> HTTPServerResponse { .text(200, "ok\n") }
    }

    @Test func theListeningPortIsFreeOnceServeReturns() throws {
        let server = try HTTPServer(
            address: "127.0.0.1:0",
            limits: HTTPLimits(),
            maxConnections: 2,
            handler: Nothing(),
            logger: Logger(label: "test")
        )
        let stop = StopSignal()
        stop.stop()
        server.serve(stop: stop, idleMilliseconds: 10) {}
        // `server` is still alive here: the port must be free all the same.
        let again = try HTTPServer(
            address: server.boundAddress,
            limits: HTTPLimits(),
            maxConnections: 2,
            handler: Nothing(),
            logger: Logger(label: "test")
        )
        #expect(again.boundAddress == server.boundAddress)
    }
}
