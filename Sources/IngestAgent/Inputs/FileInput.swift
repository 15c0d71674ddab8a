import EdgeIngestCore
import Logging
import ServiceLifecycle

#if canImport(Glibc)
import Glibc
#endif

/// Follows files like `tail -F`: new lines, rotation by rename + create and
/// by copytruncate, and files that appear later (paths and globs).
///
/// Each file's read offset is committed in the same transaction as the
/// records read from it, keyed by the file's identity (device, inode, first
/// line), so a restart — clean or `kill -9` — resumes exactly: no line lost,
/// none read twice. A file renamed away keeps being read to its end while
/// it is still open or still matched by a glob.
struct FileInput: Service {
    let context: InputContext
    private var settings: InputSettings { context.settings }
    private var counters: InputCounters { context.counters }
    private var logger: Logger { context.logger }
    /// True on the agent's first start with this queue (no positions yet).
    let firstStart: Bool

    func run() async throws {
        try await runBlockingLoop { [self] stop in try followLoop(stop: stop) }
    }

    /// One open, followed file.
    final class Followed {
        let identity: FileIdentity
        var path: String
        let fd: Int32
        var ingestor: LineIngestor
        var fingerprint: Fingerprint?
        /// The path now names another file (or none): read to the end, then close.
        var detached = false

        init(identity: FileIdentity, path: String, fd: Int32, ingestor: LineIngestor, fingerprint: Fingerprint?) {
            self.identity = identity
            self.path = path
            self.fd = fd
            self.ingestor = ingestor
            self.fingerprint = fingerprint
        }

        deinit { close(fd) }
    }

    private func followLoop(stop: StopSignal) throws {
        let committer = context.makeCommitter(stop: stop)
        var committed: [String: FilePosition] = [:]
        for (source, text) in try context.queue.positions() where source.hasPrefix("file:") {
            if let position = FilePosition(encoded: text) { committed[source] = position }
        }
        var followed: [FileIdentity: Followed] = [:]
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var firstScan = true
        let interval = context.commitIntervalSeconds
        logger.info(
            "Following files",
            metadata: ["ingest.input": "\(settings.name)", "ingest.paths": "\(settings.paths.joined(separator: ","))"]
        )
        while true {
            // 1. Which files do the patterns name now?
            var named: [FileIdentity: String] = [:]
            for path in Glob.expand(settings.paths) {
                guard let (identity, _) = FileIdentity.of(path: path) else { continue }
                named[identity] = path
            }
            for (identity, path) in named where followed[identity] == nil {
                if let file = try open(
                    path: path,
                    identity: identity,
                    committed: committed,
                    firstScan: firstScan,
                    committer: committer
                ) {
                    followed[identity] = file
                }
            }
            for file in followed.values {
                if let path = named[file.identity] {
                    file.path = path
                    file.detached = false
                } else {
                    file.detached = true
                }
            }
            firstScan = false

            // 2. Read what is new in each file.
            for file in followed.values.sorted(by: { $0.path < $1.path }) {
                try readNew(file, buffer: &buffer)
                try file.ingestor.flushIfDue(intervalSeconds: interval)
            }
            // 3. Close files renamed or deleted away once read to their end.
            for (identity, file) in followed where file.detached {
                guard let (_, size) = FileIdentity.of(fd: file.fd), file.ingestor.readOffset >= size else { continue }
                // Read to its end: a last line without newline counts now.
                try file.ingestor.finish()
                logger.info(
                    "Stopped following a rotated or deleted file",
                    metadata: ["ingest.input": "\(settings.name)", "ingest.file": "\(file.path)"]
                )
                followed[identity] = nil
            }
            counters.heartbeat()
            switch Readiness.wait(fd: -1, stop: stop, timeoutMs: Int32(settings.pollIntervalMilliseconds)) {
            case .stopped:
                for file in followed.values { try file.ingestor.flush() }
                context.rejectionLog.flushAll()  // the summary of a flood the stop cut short
                try committer.drain()
                logger.info("Stopped following files", metadata: ["ingest.input": "\(settings.name)"])
                return
            case .timeout, .readable:
                continue
            }
        }
    }

    private func open(
        path: String,
        identity: FileIdentity,
        committed: [String: FilePosition],
        firstScan: Bool,
        committer: QueueCommitter
    ) throws -> Followed? {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            logger.warning(
                "Cannot open a followed file",
                metadata: [
                    "ingest.input": "\(settings.name)", "ingest.file": "\(path)",
                    "error": "\(String(cString: strerror(errno)))",
                ]
            )
            return nil
        }
        guard let (openedIdentity, size) = FileIdentity.of(fd: fd), openedIdentity == identity else {
            close(fd)
            return nil  // replaced between stat and open: next scan
        }
        var start: Int64 = 0
        let fingerprint = Fingerprint.read(fd: fd)
        if let position = committed[identity.source] {
            let sameFile = position.fingerprint.map { $0.matches(fd: fd) } ?? true
            if sameFile && position.offset <= size {
                start = position.offset
            } else {
                logger.notice(
                    "A followed file was replaced or truncated since its last commit; reading it from the start",
                    metadata: ["ingest.input": "\(settings.name)", "ingest.file": "\(path)"]
                )
            }
        } else if firstScan && firstStart && settings.startAtEnd {
            start = size
        }
        var ingestor = context.makeIngestor(committer: committer, resumeAt: .init(offset: start, lines: 0, refused: 0))
        ingestor.positionSource = identity.source
        ingestor.positionLabel = path
        ingestor.positionEncoder = { progress in
            FilePosition(offset: progress.offset, fingerprint: fingerprint, path: path).encoded
        }
        logger.info(
            "Following a file",
            metadata: ["ingest.input": "\(settings.name)", "ingest.file": "\(path)", "ingest.offset": "\(start)"]
        )
        return Followed(identity: identity, path: path, fd: fd, ingestor: ingestor, fingerprint: fingerprint)
    }

    private func readNew(_ file: Followed, buffer: inout [UInt8]) throws {
        guard let (_, size) = FileIdentity.of(fd: file.fd) else { return }
        var offset = file.ingestor.readOffset
        let rewritten = file.fingerprint.map { !$0.matches(fd: file.fd) } ?? false
        if size < file.ingestor.committedOffset || rewritten {
            // copytruncate: the file was emptied in place. Lines written
            // after our last read and before the truncation are gone with it.
            logger.notice(
                "A followed file was truncated; reading it from the start",
                metadata: ["ingest.input": "\(settings.name)", "ingest.file": "\(file.path)"]
            )
            try file.ingestor.flush()
            file.ingestor.reset(offset: 0)
            offset = 0
            file.fingerprint = nil
        }
        if file.fingerprint == nil, let fingerprint = Fingerprint.read(fd: file.fd) {
            file.fingerprint = fingerprint
            let path = file.path
            file.ingestor.positionEncoder = {
                FilePosition(offset: $0.offset, fingerprint: fingerprint, path: path).encoded
            }
        }
        while true {
            let n = buffer.withUnsafeMutableBytes { pread(file.fd, $0.baseAddress, $0.count, off_t(offset)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw AgentError(.inputFailed, "Reading '\(file.path)' failed: \(String(cString: strerror(errno))).")
            }
            if n == 0 { return }
            try buffer.withUnsafeBytes { try file.ingestor.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            offset += Int64(n)
            file.ingestor.readOffset = offset
        }
    }
}
