#if canImport(Glibc)
import Glibc
#endif

/// Waits until `fd` is readable, the stop signal fires, or `timeoutMs` passes.
package enum Readiness {
    case readable, stopped, timeout

    package static func wait(fd: Int32, stop: StopSignal, timeoutMs: Int32) -> Readiness {
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stop.readFD, events: Int16(POLLIN), revents: 0),
        ]
        let n = poll(&fds, 2, timeoutMs)
        if n <= 0 { return .timeout }
        if fds[1].revents != 0 { return .stopped }
        return .readable
    }
}
