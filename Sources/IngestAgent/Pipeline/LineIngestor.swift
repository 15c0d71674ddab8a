import EdgeIngestCore
import Logging

/// Everything between raw bytes and the queue for one input: framing,
/// parsing (NDJSON or CSV), routing to a record type, validation, and
/// group commit. Accepted records, the input's position and the rejection
/// counters of the lines read so far are committed in one transaction.
///
/// Not thread-safe: one input's thread owns it.
struct LineIngestor {
    let settings: InputSettings
    let counters: InputCounters
    let logger: Logger
    let rejects: RejectsFile?
    let commitMaxRecords: Int
    /// Commits batches in order; see ``QueueCommitter``.
    let committer: QueueCommitter

    private var framer: LineFramer
    private var ndjson = NDJSONParser()
    private var csv: CSVParser
    private var router: ReadingRouter
    private let types: [RecordType]
    /// ``beginMessage(type:origin:)``'s routers by type name, and the one in use.
    private var routers: [String: ReadingRouter] = [:]
    private var routedTypeName: String?
    private var parsed = ParsedLine()
    private var batch = EncodedBatch()
    /// How long the last commit's records were on average: the next
    /// batch reserves room for a commit of them at once.
    private var recordBytes = 160
    private var pendingRejections: [String: Int64] = [:]
    private var pendingLines = 0
    private var lastCommit = monotonicSeconds()
    /// Rejected lines in the journal, a flood cut to a summary (the input's one log).
    private let rejectionLog: RejectionLog
    /// The batch's readings that came with their own `_id` (indices in the
    /// batch) and their line numbers, checked at ``flush()``.
    private var ownIDRecords: [Int] = []
    private var ownIDLines: [Int] = []
    /// The queue's `_id` window once made (the queue keeps the same one for
    /// its lifetime): asking the queue for it takes the queue's lock, which
    /// a commit holds through its fsync, and the input then waited for every
    /// commit in flight (issue 22: that lock's contention showed in the profile).
    private var recentIDs: RecentIDs?
    /// How positions are reported: a byte offset (files) or nothing (stdin).
    var positionSource: String?
    /// The path shown in status for this stream's offset (file inputs).
    var positionLabel: String?
    /// Turns the stream's progress at a commit into the stored position text.
    var positionEncoder: (StreamProgress) -> String = { String($0.offset) }
    /// Refused lines so far (with the count the stream resumed with).
    private(set) var refusedLines: Int64 = 0
    /// Lines handled so far (with the count the stream resumed with); unlike
    /// ``linesHandled`` also right while the framer calls back.
    private var handledLines = 0

    /// How far a stream is at a commit: what a position records.
    struct StreamProgress {
        /// Just after the last complete line handled.
        var offset: Int64
        /// Lines handled (accepted, refused or blank).
        var lines: Int
        /// Of those, refused.
        var refused: Int64
    }
    /// Where the next read starts (past any partial line held by the framer).
    var readOffset: Int64 = 0

    /// Starts a message of its own (an MQTT input's): a CSV message
    /// begins with its header, and its readings without `_type` are of
    /// `type` (named by `origin`, e.g. the message's topic), or of the
    /// input's type when `type` is nil. Routers are kept per type name.
    mutating func beginMessage(type: String?, origin: String) {
        if settings.format == .csv { csv = CSVParser() }
        let name = type ?? settings.type
        guard name != routedTypeName else { return }
        if let known = routers[name ?? ""] {
            router = known
        } else {
            let made = ReadingRouter(
                types: types,
                defaultType: name,
                inputName: settings.name,
                defaultTypeOrigin: origin
            )
            if routers.count < 64 { routers[name ?? ""] = made }
            router = made
        }
        routedTypeName = name
    }

    /// Refuses a whole message that is not read (over the size limit): one
    /// line's worth in the counters, the rejects file and the journal.
    mutating func refuseMessage(_ rejection: LineRejection, length: Int) {
        pendingLines += 1
        handledLines += 1
        reject(rejection, line: linesHandled + 1, raw: nil, rawLength: length)
    }

    /// Forgets what was read but not yet submitted for commit, once what
    /// was submitted is durable: for a source that sends it again (an MQTT
    /// broker sends unacknowledged messages again after a lost connection),
    /// so it is not stored twice. Its refused lines were reported already.
    mutating func discardPending() throws {
        try committer.drain()
        batch = emptyBatch()
        pendingRejections.removeAll(keepingCapacity: true)
        pendingLines = 0
        ownIDRecords.removeAll(keepingCapacity: true)
        ownIDLines.removeAll(keepingCapacity: true)
    }

    /// Forgets buffered bytes and restarts at `offset` (a truncated file).
    mutating func reset(offset: Int64) {
        framer.reset(offset: offset)
        committedOffset = offset
        readOffset = offset
    }

    init(
        settings: InputSettings,
        types: [RecordType],
        counters: InputCounters,
        logger: Logger,
        rejects: RejectsFile?,
        commitMaxRecords: Int,
        resumeAt start: StreamProgress = StreamProgress(offset: 0, lines: 0, refused: 0),
        committer: QueueCommitter,
        rejectionLog: RejectionLog
    ) {
        self.settings = settings
        self.counters = counters
        self.logger = logger
        self.rejects = rejects
        self.commitMaxRecords = commitMaxRecords
        self.committer = committer
        self.rejectionLog = rejectionLog
        framer = LineFramer(
            delimiter: settings.delimiter,
            maxLineBytes: settings.maxLineBytes,
            startOffset: start.offset,
            startLineNumber: start.lines + 1
        )
        committedOffset = start.offset
        readOffset = start.offset
        refusedLines = start.refused
        handledLines = start.lines
        csv = CSVParser()
        router = ReadingRouter(types: types, defaultType: settings.type, inputName: settings.name)
        self.types = types
        routedTypeName = settings.type
        batch = emptyBatch()
    }

    /// A batch with room for a commit of records like the last commit's.
    private func emptyBatch() -> EncodedBatch {
        EncodedBatch(expectedRecords: commitMaxRecords, expectedRecordBytes: recordBytes)
    }

    /// Offset just after the last complete line handled.
    private(set) var committedOffset: Int64 = 0

    mutating func feed(_ chunk: UnsafeRawBufferPointer) throws {
        // The framer is moved out while it calls back into `self`.
        var framer = takeFramer()
        defer { self.framer = framer }
        try framer.feed(chunk) { event in try handle(event) }
    }

    /// End of input: the last line without a delimiter counts, then
    /// everything is committed before this returns.
    mutating func finish() throws {
        var framer = takeFramer()
        defer { self.framer = framer }
        try framer.finish { event in try handle(event) }
        try flushAndWait()
    }

    /// Submits what is pending and waits until everything submitted is
    /// durable. `summarizeAll`: log the summary of every flood of rejections
    /// now (the stream stops or ends); otherwise only of those whose window
    /// has ended, so that a stream that commits after each chunk (a socket
    /// sender) still gets one summary per window, not one per chunk.
    mutating func flushAndWait(summarizeAll: Bool = true) throws {
        if summarizeAll { rejectionLog.flushAll() } else { rejectionLog.flushExpired() }
        try flush()
        try committer.drain()
    }

    private mutating func takeFramer() -> LineFramer {
        var taken = LineFramer(delimiter: settings.delimiter, maxLineBytes: 0)
        swap(&taken, &framer)
        return taken
    }

    /// The bytes read past the last complete line (after
    /// ``flushAndWait()``: past ``committedOffset``), to carry the stream
    /// over to another ingestor; nil while an overlong line is skipped.
    var unframedBytes: [UInt8]? { framer.incompleteLine }

    /// Lines handed on so far (accepted, refused or blank): after
    /// ``flushAndWait()``, every one of them is committed or counted.
    var linesHandled: Int { framer.nextLineNumber - 1 }

    /// Told of each refused line as it is refused (a socket input tells its client).
    var onReject: ((_ line: Int, _ rejection: LineRejection) -> Void)?

    /// Whether read lines wait for a commit. An idle input with nothing
    /// pending can sleep until its next heartbeat instead of the commit
    /// interval.
    var hasPending: Bool { pendingLines > 0 }

    /// Commits what is pending if the commit interval has passed.
    mutating func flushIfDue(intervalSeconds: Double) throws {
        rejectionLog.flushExpired()
        if pendingLines > 0, monotonicSeconds() - lastCommit >= intervalSeconds { try flush() }
    }

    /// Submits pending records, rejection counts and the position for
    /// commit (in order, in the background; see ``flushAndWait()``).
    mutating func flush() throws {
        guard pendingLines > 0 else { return }
        refuseRepeatedIDs()
        var positions: [SourcePosition] = []
        if let source = positionSource {
            let progress = StreamProgress(offset: committedOffset, lines: handledLines, refused: refusedLines)
            positions.append(SourcePosition(source: source, position: positionEncoder(progress)))
        }
        let counts = pendingRejections.reduce(into: [String: Int64]()) { $0["rejected." + $1.key] = $1.value }
        try committer.submit(batch, positions, counts)
        let accepted = Int64(batch.count)
        let rejections = pendingRejections
        let position = positionSource.map { _ in String(committedOffset) }
        let label = positionLabel
        let offset = committedOffset
        let lines = Int64(pendingLines)
        counters.update { s in
            s.linesRead += lines
            s.accepted += accepted
            for (reason, n) in rejections {
                s.rejected += n
                s.rejectedByReason[reason, default: 0] += n
            }
            if let label {
                s.files = s.files ?? [:]
                s.files![label] = offset
            } else if let position {
                s.position = position
            }
            s.heartbeatAt = monotonicMilliseconds()
        }
        recordBytes = batch.nextExpectedRecordBytes ?? recordBytes
        batch = emptyBatch()
        pendingRejections.removeAll(keepingCapacity: true)
        pendingLines = 0
        lastCommit = monotonicSeconds()
    }

    private mutating func handle(_ event: LineFramer.Event) throws {
        pendingLines += 1
        handledLines += 1
        switch event {
        case .overlong(_, _, let end), .line(_, _, let end): committedOffset = end
        }
        switch event {
        case .overlong(let number, let bytes, _):
            reject(
                LineRejection(
                    reason: "line_too_long",
                    message: "line is \(bytes) bytes, over the input's max_line_bytes of \(settings.maxLineBytes)"
                ),
                line: number,
                raw: nil,
                rawLength: bytes
            )
        case .line(let bytes, let number, _):
            if LineFramer.isBlank(bytes) { break }  // skipped, not rejected
            do throws(LineRejection) {
                let ownID: Bool
                switch settings.format {
                case .ndjson:
                    // Most sensor lines are already their record: checked and
                    // appended in one pass; any other line is parsed and routed.
                    if let writersForm = router.appendIfWritersForm(bytes, into: &batch) {
                        ownID = writersForm
                    } else {
                        try ndjson.parse(bytes, into: &parsed)
                        ownID = try router.route(parsed, into: &batch)
                    }
                case .csv:
                    if csv.header == nil {
                        parsed.removeAll()
                        try csv.readHeader(bytes)
                        ownID = false
                    } else {
                        try csv.parse(bytes, into: &parsed)
                        ownID = parsed.fields.isEmpty ? false : try router.route(parsed, into: &batch)
                    }
                }
                if ownID {
                    ownIDRecords.append(batch.count - 1)
                    ownIDLines.append(number)
                }
            } catch {
                reject(error, line: number, raw: bytes, rawLength: bytes.count)
            }
        }
        if batch.count >= commitMaxRecords { try flush() }
    }

    /// Takes the readings out of the batch whose own `_id` is already
    /// queued or was taken recently (by any input of the queue, or earlier
    /// in this batch), each a `duplicate_id` rejection of its line. One
    /// claim per batch: one lock, and the window's cache misses overlap.
    private mutating func refuseRepeatedIDs() {
        defer {
            ownIDRecords.removeAll(keepingCapacity: true)
            ownIDLines.removeAll(keepingCapacity: true)
        }
        // The queue's window is made (and read from the file) on first need:
        // agents whose readings get generated ids never pay for it. Nil only
        // when the queue is closed, and then the commit fails anyway.
        // A committer with a receipt leaves repeats out durably itself (an MQTT input).
        guard !ownIDRecords.isEmpty, committer.receipt == nil else { return }
        if recentIDs == nil { recentIDs = try? committer.queue.recentIDs() }
        guard let recentIDs else { return }
        let known = recentIDs.claim(batch, indices: ownIDRecords)
        guard !known.isEmpty else { return }
        var records: [Int] = []
        for position in known {
            let index = ownIDRecords[position]
            records.append(index)
            let rejection = LineRejection(
                reason: "duplicate_id",
                message:
                    "_id \(batch.id(at: index).hexString) is already queued or was taken recently; a reading is stored once per _id (a line sent again, or two readings under one _id)"
            )
            let raw = batch.withRecord(at: index) { Array($0) }
            raw.withUnsafeBytes { reject(rejection, line: ownIDLines[position], raw: $0, rawLength: $0.count) }
        }
        batch = batch.removing(records)
    }

    private mutating func reject(_ rejection: LineRejection, line: Int, raw: UnsafeRawBufferPointer?, rawLength: Int) {
        pendingRejections[rejection.reason, default: 0] += 1
        refusedLines += 1
        rejectionLog.rejected(rejection, line: line)
        onReject?(line, rejection)
        rejects?.append(input: settings.name, line: line, rejection: rejection, raw: raw, rawLength: rawLength)
    }
}
