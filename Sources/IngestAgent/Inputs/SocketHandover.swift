import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// `ingestd send` connections kept open across a reload: a connection of a
/// session (``SocketSession``) that is stopped by a reload commits what it
/// read and is parked here, with the bytes it read past its last complete
/// line; the socket input of the next run, same name, serves it on. The
/// sender sees nothing but `COMMITTED` going on. A stop that is no reload
/// (SIGTERM, a restart) answers `RETRY` instead, and the sender reconnects
/// and resumes.
package final class SocketHandover: Sendable {
    struct Parked: Sendable {
        var fd: Int32
        var input: String
        var settings: InputSettings
        var session: SocketSession
        var unframed: [UInt8]
    }

    private let parked = PlainMutex<[Parked]>([])

    package init() {}

    func park(_ connection: Parked) { parked.withLock { $0.append(connection) } }

    /// The connections parked for the input named `input`, taken.
    func take(input: String) -> [Parked] {
        parked.withLock { all in
            let mine = all.filter { $0.input == input }
            all.removeAll { $0.input == input }
            return mine
        }
    }

    deinit {
        for connection in parked.withLock({ $0 }) { close(connection.fd) }
    }
}
