#if canImport(Glibc)
import Glibc
#endif

/// The records the backend refused one by one, for the app: what the
/// agent's `ingestd dead-letter` commands do, as methods. Each refusal is
/// also reported to ``SyncManager/errorHandler`` when it happens.
///
/// ```swift
/// for letter in try realm.deadLetters() {
///     print("#\(letter.number) \(letter.type) \(letter.recordID): \(letter.reason)")
/// }
/// try realm.replayDeadLetters()            // after fixing the backend
/// ```
extension IngestRealm {
    /// The dead letters, oldest first (at most `limit`), with their data.
    public func deadLetters(limit: Int = .max) throws -> [DeadLetter] { try queue.deadLetters(limit: limit) }

    /// Moves dead letters back into the queue to be uploaded again (same
    /// `_id`s) and wakes the upload; nil replays all. Fix the cause first,
    /// or they come back.
    ///
    /// - Returns: how many were replayed.
    @discardableResult
    public func replayDeadLetters(_ numbers: Set<Int64>? = nil) throws -> Int {
        let replayed = try queue.replayDeadLetters(numbers)
        upload?.wake.wake()
        return replayed
    }

    /// Deletes dead letters for good (nil: all); export them first if they
    /// may be needed. Their `_id`s may be written again (a corrected record).
    ///
    /// - Returns: how many were deleted.
    @discardableResult
    public func discardDeadLetters(_ numbers: Set<Int64>? = nil) throws -> Int {
        let letters = try queue.deadLetters().filter { numbers?.contains($0.number) ?? true }
        let discarded = try queue.discardDeadLetters(numbers)
        // Their _ids are free again: a corrected record may be written under one.
        try queue.recentIDs().forget(letters.map { (typeName: $0.type, id: $0.recordID) })
        return discarded
    }

    /// Writes the dead letters, with their data, to `path` as NDJSON (mode
    /// 0600), one `{"number", "_id", "type", "schema_version", "reason",
    /// "failed_at", "sink", "record"}` object per line: the format of
    /// `ingestd dead-letter export`.
    ///
    /// - Returns: how many were written.
    /// - Throws: ``EdgeIngestError/Code/storage`` when the file cannot be written.
    @discardableResult
    public func exportDeadLetters(toFile path: String) throws -> Int {
        let letters = try queue.deadLetters()
        try DeadLetter.export(letters, toFile: path)
        return letters.count
    }
}

extension DeadLetter {
    /// One line of a dead-letter export (NDJSON, with its newline): the
    /// format of `ingestd dead-letter export` and ``IngestRealm/exportDeadLetters(toFile:)``.
    public func exportLine() -> [UInt8] {
        var line = Array("{\"number\":\(number),\"_id\":\"\(recordID)\",\"type\":".utf8)
        JSONWriter.appendString(type, to: &line)
        line += Array(",\"schema_version\":\(schemaVersion),\"reason\":".utf8)
        JSONWriter.appendString(reason, to: &line)
        line += Array(",\"failed_at\":\(failedAt),\"sink\":".utf8)
        if let sink { JSONWriter.appendString(sink, to: &line) } else { line += Array("null".utf8) }
        line += Array(",\"record\":".utf8)
        line += payload
        line += Array("}\n".utf8)
        return line
    }

    /// Writes `letters` to `path` as NDJSON, one ``exportLine()`` each, in
    /// a file created (or truncated) with mode 0600: the records are
    /// private. `written` is told the count after each line (progress).
    ///
    /// - Throws: ``EdgeIngestError/Code/storage`` naming the file and the
    ///   system's reason when it cannot be written.
    public static func export(
        _ letters: [DeadLetter],
        toFile path: String,
        written: (Int) -> Void = { _ in }
    ) throws {
        func failure(_ doing: String) -> EdgeIngestError {
            EdgeIngestError(.storage, "\(doing) '\(path)' failed: \(String(cString: strerror(errno))).")
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure("Opening") }
        defer { close(fd) }
        // An existing file keeps its mode through O_CREAT.
        guard fchmod(fd, 0o600) == 0 else { throw failure("Making private") }
        for (i, letter) in letters.enumerated() {
            let line = letter.exportLine()
            guard line.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == line.count else {
                throw failure("Writing")
            }
            written(i + 1)
        }
    }
}
