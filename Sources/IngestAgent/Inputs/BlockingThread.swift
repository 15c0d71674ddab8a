#if canImport(Glibc)
import Glibc
#endif

/// Runs blocking work (a `read` on a pipe or tty) on its own OS thread, so
/// it never occupies one of the few threads of Swift's cooperative pool.
enum BlockingThread {
    private final class Box {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }
    }

    /// Runs `body` on a new thread and returns when it has finished.
    static func run(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let box = Box {
                body()
                continuation.resume()
            }
            var thread = pthread_t()
            let context = Unmanaged.passRetained(box).toOpaque()
            let rc = pthread_create(&thread, nil, { raw in
                let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
                box.body()
                return nil
            }, context)
            if rc != 0 {
                // No thread: run inline rather than lose the input.
                Unmanaged<Box>.fromOpaque(context).takeRetainedValue().body()
            } else {
                pthread_detach(thread)
            }
        }
    }
}

/// A self-pipe that wakes a thread blocked in `poll` when it must stop.
final class StopSignal: Sendable {
    let readFD: Int32
    private let writeFD: Int32

    init() {
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

    func stop() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    /// Empties the pipe (when used as a wake-up signal rather than a stop).
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 256)
        while buffer.withUnsafeMutableBytes({ read(readFD, $0.baseAddress, $0.count) }) > 0 {}
    }

    var isStopped: Bool {
        var pfd = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
        return poll(&pfd, 1, 0) > 0
    }
}

/// Waits until `fd` is readable, the stop signal fires, or `timeoutMs` passes.
enum Readiness {
    case readable, stopped, timeout

    static func wait(fd: Int32, stop: StopSignal, timeoutMs: Int32) -> Readiness {
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: stop.readFD, events: Int16(POLLIN), revents: 0)]
        let n = poll(&fds, 2, timeoutMs)
        if n <= 0 { return .timeout }
        if fds[1].revents != 0 { return .stopped }
        return .readable
    }
}
