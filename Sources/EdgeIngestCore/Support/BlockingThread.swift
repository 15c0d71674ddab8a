import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs blocking work (a `read` on a pipe or tty) on its own OS thread, so
/// it never occupies one of the few threads of Swift's cooperative pool.
package enum BlockingThread {
    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Starts `body` on a new joinable thread; nil if no thread could be made.
    package static func start(_ body: @escaping () -> Void) -> pthread_t? {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(Box(body)).toOpaque()
        let rc = pthread_create(&thread, nil, { raw in
            Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<Box>.fromOpaque(context).release()
            return nil
        }
        return thread
    }

    /// Starts `body` on a new detached thread; false if no thread could be made.
    package static func detach(_ body: @escaping @Sendable () -> Void) -> Bool {
        guard let thread = start(body) else { return false }
        pthread_detach(thread)
        return true
    }

    /// Runs `body` on a new thread and returns when it has finished.
    package static func run(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let started = detach {
                body()
                continuation.resume()
            }
            if !started {
                // No thread: run inline rather than lose the input.
                body()
                continuation.resume()
            }
        }
    }
}

/// A self-pipe that wakes a thread blocked in `poll` when it must stop,
/// and runs the actions registered with ``onStop(_:)`` for work that is not
/// in `poll` (a commit waiting for queue space).
package final class StopSignal: Sendable {
    package let readFD: Int32
    private let writeFD: Int32
    private let actions = Mutex<(stopped: Bool, pending: [@Sendable () -> Void])>((false, []))

    package init() {
        var fds: [Int32] = [-1, -1]
        _ = pipe(&fds)
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        readFD = fds[0]
        writeFD = fds[1]
    }

    deinit {
        close(readFD)
        close(writeFD)
    }

    package func stop() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
        let run = actions.withLock { actions in
            actions.stopped = true
            defer { actions.pending = [] }
            return actions.pending
        }
        for action in run { action() }
    }

    /// Runs `action` once, at the first ``stop()`` (at once if that has
    /// already happened).
    package func onStop(_ action: @escaping @Sendable () -> Void) {
        let now = actions.withLock { actions in
            if actions.stopped { return true }
            actions.pending.append(action)
            return false
        }
        if now { action() }
    }

    /// Empties the pipe (when used as a wake-up signal rather than a stop).
    package func drain() {
        var buffer = [UInt8](repeating: 0, count: 256)
        while buffer.withUnsafeMutableBytes({ read(readFD, $0.baseAddress, $0.count) }) > 0 {}
    }

    package var isStopped: Bool {
        var pfd = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
        return poll(&pfd, 1, 0) > 0
    }
}

/// Waits until `fd` is readable, the stop signal fires, or `timeoutMs` passes.
package enum Readiness {
    case readable, stopped, timeout

    package static func wait(fd: Int32, stop: StopSignal, timeoutMs: Int32) -> Readiness {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: stop.readFD, events: Int16(POLLIN), revents: 0)]
        let n = poll(&fds, 2, timeoutMs)
        if n <= 0 { return .timeout }
        if fds[1].revents != 0 { return .stopped }
        return .readable
    }
}

extension BlockingThread {
    /// Runs blocking `body` (a libcurl request, an fsync) on its own thread
    /// and returns its result, keeping the cooperative pool free.
    package static func value<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let result = ResultBox<T>()
        await run { result.set(Result { try body() }) }
        return try result.get()
    }
}

private final class ResultBox<T: Sendable>: @unchecked Sendable {
    // Written once by the worker thread before the continuation resumes,
    // read after: the continuation orders the two.
    private var result: Result<T, any Error>?
    func set(_ value: Result<T, any Error>) { result = value }
    func get() throws -> T { try result!.get() }
}
