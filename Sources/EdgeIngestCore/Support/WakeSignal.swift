#if canImport(Glibc)
import Glibc
#endif

/// A self-pipe that wakes a thread waiting in `poll` for more work (new
/// readings committed, a hold lifted): ``wake()`` may be called any
/// number of times, the waiter ``drain()``s it and waits again. Not a
/// stop: that is ``StopSignal``, which stays fired and runs its actions.
///
/// ```swift
/// let committed = WakeSignal()
/// committed.wake()                        // a producer, after its commit
/// if case .readable = Readiness.wait(fd: committed.readFD, stop: stop, timeoutMs: 200) {
///     committed.drain()                   // the uploader, then leases
/// }
/// ```
package final class WakeSignal: Sendable {
    private let pipe = SelfPipe()
    package var readFD: Int32 { pipe.readFD }

    /// Signals woken with this one: a commit wakes every sink's uploader.
    private let followers: [WakeSignal]

    package init(alsoWaking followers: [WakeSignal] = []) { self.followers = followers }

    /// Wakes the waiter (a full pipe already says so: the write may fail),
    /// and those of the signals it was made to wake too.
    package func wake() {
        pipe.poke()
        for follower in followers { follower.wake() }
    }

    /// Empties the pipe once the waiter woke.
    package func drain() {
        var buffer = [UInt8](repeating: 0, count: 256)
        while buffer.withUnsafeMutableBytes({ read(readFD, $0.baseAddress, $0.count) }) > 0 {}
    }
}

/// A non-blocking, close-on-exec pipe whose read end `poll` watches: the
/// one thing ``StopSignal`` and ``WakeSignal`` share. Closed with its owner.
final class SelfPipe: Sendable {
    let readFD: Int32
    private let writeFD: Int32

    init() {
        var fds: [Int32] = [-1, -1]
        _ = Glibc.pipe(&fds)
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

    /// Makes the read end readable.
    func poke() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }
}
