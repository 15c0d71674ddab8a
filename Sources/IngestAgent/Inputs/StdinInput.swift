import EdgeIngestCore
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// Reads readings piped on standard input (`sensor.py | ingestd run`).
///
/// At end of input it commits what it read and finishes. On graceful
/// shutdown (SIGTERM) it stops reading, commits what it read, and finishes.
struct StdinInput: Service {
    let context: InputContext
    let fd: Int32 = 0
    private var settings: InputSettings { context.settings }
    private var counters: InputCounters { context.counters }
    private var logger: Logger { context.logger }

    func run() async throws {
        defer { counters.update { $0.finished = true } }
        try await runBlockingLoop { [self] stop in try readLoop(stop: stop) }
    }

    private func readLoop(stop: StopSignal) throws {
        var ingestor = context.makeIngestor(committer: context.makeCommitter(stop: stop))
        let interval = context.commitIntervalSeconds
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        logger.info(
            "Reading stdin",
            metadata: ["ingest.input": "\(settings.name)", "ingest.format": "\(settings.format.rawValue)"]
        )
        if StdinInput.isDevNull(fd) {
            logger.warning(
                "stdin is /dev/null (as under systemd), so this input ends at once: configure a file or serial input for a service",
                metadata: ["ingest.input": "\(settings.name)"]
            )
        }
        while true {
            switch Readiness.wait(fd: fd, stop: stop, timeoutMs: context.waitMilliseconds(pending: ingestor.hasPending))
            {
            case .stopped:
                try ingestor.flushAndWait()
                logger.info("Stopped reading stdin", metadata: ["ingest.input": "\(settings.name)"])
                return
            case .timeout:
                counters.heartbeat()
                try ingestor.flushIfDue(intervalSeconds: interval)
                continue
            case .readable:
                break
            }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                try ingestor.flushAndWait()
                throw AgentError(.inputFailed, "Reading stdin failed: \(String(cString: strerror(errno))).")
            }
            if n == 0 {
                try ingestor.finish()
                logger.info(
                    "End of stdin: everything read is committed",
                    metadata: ["ingest.input": "\(settings.name)"]
                )
                return
            }
            try buffer.withUnsafeBytes { try ingestor.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            try ingestor.flushIfDue(intervalSeconds: interval)
            counters.heartbeat()
        }
    }
}

extension StdinInput {
    /// Whether `fd` is the same character device as /dev/null.
    static func isDevNull(_ fd: Int32) -> Bool {
        var info = stat()
        var null = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFCHR, stat("/dev/null", &null) == 0 else {
            return false
        }
        return info.st_rdev == null.st_rdev
    }
}
