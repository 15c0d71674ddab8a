#if canImport(Glibc)
import Glibc
#endif

/// A self-pipe that wakes a thread blocked in `poll` when it must stop,
/// and runs the actions registered with ``onStop(_:)`` for work that is not
/// in `poll` (a commit waiting for queue space). Once stopped it stays
/// stopped; a signal that wakes a waiter again and again is ``WakeSignal``.
package final class StopSignal: Sendable {
    private let pipe = SelfPipe()
    package var readFD: Int32 { pipe.readFD }
    private let actions = PlainMutex<(stopped: Bool, pending: [@Sendable () -> Void])>((false, []))

    package init() {}

    package func stop() {
        pipe.poke()
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

    package var isStopped: Bool {
        var pfd = pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)
        return poll(&pfd, 1, 0) > 0
    }
}
