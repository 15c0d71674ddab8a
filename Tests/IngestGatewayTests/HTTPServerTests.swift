import EdgeIngest
import Foundation
import Logging
import Synchronization
import Testing

@testable import IngestGateway

/// The listener's own loop (connections are HTTPConnectionTests').
struct HTTPServerTests {
    struct Answer204: HTTPHandler {
        func respond(to request: HTTPRequest, peer: String) -> IngestGateway.HTTPServerResponse {
            IngestGateway.HTTPServerResponse(status: 204, headers: [], body: [])
        }
    }

    @Test func aListenerBusyAcceptingStillShowsItIsAlive() throws {
        let server = try HTTPServer(
            address: "127.0.0.1:0",
            limits: HTTPLimits(),
            maxConnections: 4,
            handler: Answer204(),
            logger: Logger(label: "test")
        )
        let port = try #require(Int(server.boundAddress.split(separator: ":").last ?? ""))
        let stop = StopSignal()
        let beats = Mutex(0)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            server.serve(stop: stop, idleMilliseconds: 1_000) { beats.withLock { $0 += 1 } }
            done.signal()
        }
        // A connection every 100 ms, more often than the idle wake-up: a
        // heartbeat only on idle time-outs would never come.
        let started = Date()
        var connections = 0
        while Date().timeIntervalSince(started) < 2.5 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            if connected == 0 { connections += 1 }
            close(fd)
            usleep(100_000)
        }
        stop.stop()
        done.wait()
        #expect(connections >= 15)
        // One per accepted connection (at least), not one per idle second.
        #expect(
            beats.withLock { $0 } >= connections,
            "\(beats.withLock { $0 }) heartbeats for \(connections) connections"
        )
    }
}
