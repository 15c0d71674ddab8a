import EdgeIngestCore

/// A resumable `ingestd send` stream (header field `session=ID`): the
/// sender keeps what the agent has not confirmed, and after a reload, a
/// restart or a crash of the agent it reconnects with the same id and sends
/// again from where the last commit left off. The agent stores how far each
/// session is in the queue's positions (source `send:ID`, the text
/// `<lines> <bytes> <refused>`), in the same transaction as its readings,
/// so a resumed stream is stored exactly once, with or without `_id`s
/// (docs/PROTOCOL.md, "The local socket").
struct SocketSession {
    let id: String

    /// The queue position's source for this session.
    var source: String { Self.sourcePrefix + id }
    static let sourcePrefix = "send:"
    /// Sessions not committed to for this long are forgotten: a sender
    /// resumes within its `--wait`, minutes by default.
    static let forgetAfterMilliseconds: Int64 = 7 * 24 * 3600 * 1000

    /// An id a sender chose: 16 to 64 characters of `[0-9a-zA-Z_-]`; nil otherwise.
    init?(id: Substring) {
        guard (16...64).contains(id.utf8.count),
            id.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || Self.isAlphanumeric($0) })
        else { return nil }
        self.id = String(id)
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    /// How far the session's stream is committed: nothing for a new one.
    func resumePoint(in queue: DurableQueue) throws -> LineIngestor.StreamProgress {
        guard let text = try queue.position(of: source) else { return .init(offset: 0, lines: 0, refused: 0) }
        let words = text.split(separator: " ")
        guard words.count == 3, let lines = Int(words[0]), let offset = Int64(words[1]), let refused = Int64(words[2])
        else {
            throw AgentError(
                .inputFailed,
                "The stored position of send session \(id) is not '<lines> <bytes> <refused>'."
            )
        }
        return .init(offset: offset, lines: lines, refused: refused)
    }

    static func encode(_ progress: LineIngestor.StreamProgress) -> String {
        "\(progress.lines) \(progress.offset) \(progress.refused)"
    }
}

/// The sessions being served, so that one session is never served on two
/// connections at once (a sender that gave up on a frozen connection and
/// reconnected while the agent still serves the old one is told to retry).
final class ActiveSocketSessions: Sendable {
    private let ids = PlainMutex<Set<String>>([])

    /// Claims `id`; false when a connection serves it already.
    func claim(_ id: String) -> Bool { ids.withLock { $0.insert(id).inserted } }

    func release(_ id: String) { _ = ids.withLock { $0.remove(id) } }
}
