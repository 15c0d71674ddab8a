import Dispatch
import EdgeIngestCore

#if canImport(Glibc)
import Glibc
#endif

/// Serves each accepted connection on a thread of its own, at most `limit`
/// at a time, and lets a stopping server wait until every one has ended.
/// The socket input accepts this way (the HTTP input has its event loop).
final class ConnectionThreads: Sendable {
    let limit: Int
    private let active = PlainMutex(0)
    private let finished = DispatchGroup()

    init(limit: Int) { self.limit = limit }

    /// Runs `serve` on a new thread, then closes `fd` unless `serve` kept
    /// it (returned false: a connection parked across a reload). False
    /// when `limit` connections are served already or no thread could be
    /// made: nothing ran, and `fd` is the caller's to refuse and close.
    func start(_ fd: Int32, _ serve: @escaping @Sendable () -> Bool) -> Bool {
        let admitted = active.withLock { count -> Bool in
            guard count < limit else { return false }
            count += 1
            return true
        }
        guard admitted else { return false }
        finished.enter()
        let started = BlockingThread.detach { [self] in
            let done = serve()
            // The slot is free before the client sees the close: a client
            // that reconnects at once is never counted twice.
            active.withLock { $0 -= 1 }
            if done { close(fd) }
            finished.leave()
        }
        if !started {
            active.withLock { $0 -= 1 }
            finished.leave()
        }
        return started
    }

    /// Returns once every connection started has ended.
    func waitForAll() { finished.wait() }
}
