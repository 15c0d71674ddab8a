import EdgeIngestCore
import Logging
import Testing

@testable import IngestGateway

#if canImport(Glibc)
import Glibc
#endif

/// A stopped server lets go of its port when `serve` returns, not when the
/// object happens to be freed: after a reload the next run binds the same
/// port at once (a reload with `[metrics]` died with "Address already in
/// use" under a real systemd, issue 38).
@Suite struct HTTPServerListenerTests {
    static func server(_ address: String) throws -> HTTPServer {
        try HTTPServer(
            address: address,
            limits: HTTPLimits(),
            maxConnections: 2,
            handler: HTTPServerTests.Answer204(),
            logger: Logger(label: "test")
        )
    }

    @Test func theListeningPortIsFreeOnceServeReturns() throws {
        let server = try Self.server("127.0.0.1:0")
        let stop = StopSignal()
        stop.stop()
        server.serve(stop: stop, idleMilliseconds: 10) {}
        // `server` is still alive here: the port must be free all the same.
        let again = try Self.server(server.boundAddress)
        #expect(again.boundAddress == server.boundAddress)
    }
}
