import EdgeIngestCore
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// Reads line-framed readings from a serial port (a USB sensor, a
/// gateway's RS-232). When the device disappears (unplugged), what was read
/// is committed and the device is reopened with backoff — logged once per
/// outage, not per retry.
struct SerialInput: Service {
    let context: InputContext
    private var settings: InputSettings { context.settings }
    private var counters: InputCounters { context.counters }
    private var logger: Logger { context.logger }

    /// Reconnection delays: 100 ms doubling up to 5 s.
    static func backoffMilliseconds(attempt: Int) -> Int {
        min(5_000, 100 << min(attempt, 6))
    }

    func run() async throws {
        try await runBlockingLoop { [self] stop in try connectionLoop(stop: stop) }
    }

    private func connectionLoop(stop: StopSignal) throws {
        let device = settings.device ?? ""
        let committer = context.makeCommitter(stop: stop)
        var attempt = 0
        var outageLogged = false
        var connectedOnce = false
        while !stop.isStopped {
            let fd: Int32
            do {
                fd = try SerialPort.open(path: device, baud: settings.baud)
            } catch {
                if !outageLogged {
                    logger.warning(
                        "Serial device unavailable; retrying with backoff",
                        metadata: [
                            "ingest.input": "\(settings.name)", "ingest.device": "\(device)", "error": "\(error)",
                        ]
                    )
                    outageLogged = true
                }
                counters.update { $0.disconnected = true }
                counters.heartbeat()
                if case .stopped = Readiness.wait(
                    fd: -1,
                    stop: stop,
                    timeoutMs: Int32(Self.backoffMilliseconds(attempt: attempt))
                ) {
                    break
                }
                attempt += 1
                continue
            }
            logger.info(
                connectedOnce ? "Serial device is back" : "Serial device opened",
                metadata: [
                    "ingest.input": "\(settings.name)", "ingest.device": "\(device)", "ingest.baud": "\(settings.baud)",
                ]
            )
            connectedOnce = true
            attempt = 0
            outageLogged = false
            counters.update { $0.disconnected = false }
            let stopped = try readUntilGone(fd: fd, stop: stop, committer: committer)
            close(fd)
            if stopped { break }
            logger.warning(
                "Serial device disconnected; what was read is committed, reconnecting",
                metadata: ["ingest.input": "\(settings.name)", "ingest.device": "\(device)"]
            )
            outageLogged = true
        }
        try committer.drain()
    }

    /// Reads until the device goes away (false) or the agent stops (true).
    private func readUntilGone(fd: Int32, stop: StopSignal, committer: QueueCommitter) throws -> Bool {
        var ingestor = context.makeIngestor(committer: committer)
        let interval = context.commitIntervalSeconds
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var fds = [
                pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stop.readFD, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, 2, context.waitMilliseconds(pending: ingestor.hasPending))
            counters.heartbeat()
            if ready > 0, fds[1].revents != 0 {
                try ingestor.flushAndWait()
                return true
            }
            if ready <= 0 {
                try ingestor.flushIfDue(intervalSeconds: interval)
                continue
            }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                try buffer.withUnsafeBytes { try ingestor.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
                try ingestor.flushIfDue(intervalSeconds: interval)
                continue
            }
            if n < 0 && (errno == EAGAIN || errno == EINTR) && fds[0].revents & Int16(POLLHUP | POLLERR) == 0 {
                continue
            }
            // EOF, EIO or hangup: the device is gone. A last partial line is
            // judged like any other (and rejected if it was cut), not dropped.
            try ingestor.finish()
            return false
        }
    }
}
