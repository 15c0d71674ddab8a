/// What one `ingestd send` keeps across its connections to the agent: the
/// bytes of standard input the agent has not confirmed yet (sent again
/// after a reconnection), and what the agent has said. No I/O: the command
/// reads and writes, this decides.
///
/// ```swift
/// var stream = SendStream(session: "3f9c…")
/// stream.append(bytesFromStdin)
/// switch stream.handle("COMMITTED 12 804") { … }
/// ```
struct SendStream {
    /// The session id the agent files this stream's progress under.
    let session: String
    /// Bytes of the stream from ``keptStart`` on (from `storage[head]`):
    /// read, not yet confirmed. Confirmed bytes are dropped from the front
    /// in bulk, once they are half of the storage.
    private var storage: [UInt8] = []
    private var head = 0
    /// The stream offset of the first kept byte: everything before is committed.
    private(set) var keptStart: Int64 = 0
    /// Lines the agent confirmed committed (or refused), in the whole stream.
    private(set) var confirmedLines = 0
    /// Refused lines the agent reported on this run of send.
    private(set) var refusedReported = 0
    /// The agent's final word: lines, refused lines (the whole session's).
    private(set) var done: (lines: Int, refused: Int)?
    /// Whether standard input has ended (everything it had is kept or confirmed).
    var inputEnded = false

    init(session: String) { self.session = session }

    /// The stream offset just past the last byte read from standard input.
    var end: Int64 { keptStart + Int64(keptCount) }

    /// How many bytes are kept (read, not yet confirmed).
    var keptCount: Int { storage.count - head }

    mutating func append(_ bytes: ArraySlice<UInt8>) { storage += bytes }

    /// The kept bytes from stream offset `offset` on (what to send next).
    func bytes(from offset: Int64) -> ArraySlice<UInt8> {
        storage[(head + Int(offset - keptStart))...]
    }

    /// What a line from the agent means for the connection.
    enum Answer: Equatable {
        /// Go on. `resumeAt`: the agent's committed offset, where sending starts again.
        case progress(resumeAt: Int64?)
        /// A refused line: print it.
        case refused(line: String)
        /// Every line is committed or refused: the stream is done.
        case done
        /// The agent ends this connection but the session goes on: reconnect.
        case retry(reason: String)
        /// The agent refused the stream for good.
        case failed(reason: String)
    }

    mutating func handle(_ line: String) -> Answer {
        let words = line.split(separator: " ", maxSplits: 3)
        switch words.first {
        case "RESUME" where words.count >= 3:
            guard let lines = Int(words[1]), let offset = Int64(words[2]) else { break }
            guard offset >= keptStart, offset <= end else {
                return .failed(
                    reason:
                        "the agent resumes this stream at byte \(offset), but this send kept bytes \(keptStart) to \(end): its queue was replaced or restored while sending"
                )
            }
            confirm(lines: lines, offset: offset)
            return .progress(resumeAt: offset)
        case "COMMITTED" where words.count >= 2:
            guard let lines = Int(words[1]) else { break }
            if words.count >= 3, let offset = Int64(words[2]), offset >= keptStart, offset <= end {
                confirm(lines: lines, offset: offset)
            } else {
                confirmedLines = max(confirmedLines, lines)
            }
            return .progress(resumeAt: nil)
        case "REJECTED" where words.count >= 3:
            refusedReported += 1
            return .refused(line: "line \(words[1]): \(words[2])" + (words.count > 3 ? ": \(words[3])" : ""))
        case "DONE" where words.count >= 3:
            done = (Int(words[1]) ?? confirmedLines, Int(words[2]) ?? refusedReported)
            return .done
        case "RETRY":
            return .retry(reason: String(line.dropFirst("RETRY ".count)))
        case "ERROR":
            return .failed(reason: String(line.dropFirst("ERROR ".count)))
        default:
            break
        }
        return .progress(resumeAt: nil)
    }

    /// The agent has committed the first `lines` lines, up to `offset`: let go of those bytes.
    private mutating func confirm(lines: Int, offset: Int64) {
        confirmedLines = max(confirmedLines, lines)
        head += Int(offset - keptStart)
        keptStart = offset
        if head > storage.count / 2 {
            storage.removeFirst(head)
            head = 0
        }
    }
}
