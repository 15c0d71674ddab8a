/// Splits a byte stream into lines with bounded memory.
///
/// A line longer than `maxLineBytes` is reported as ``Event/overlong`` and
/// skipped up to its delimiter without being buffered. A trailing `\r` is
/// dropped (CR/LF tolerant). Byte offsets let file inputs commit exactly
/// where the next unread line starts.
package struct LineFramer {
    package enum Event {
        /// A complete line (without delimiter or trailing CR), valid only during the callback.
        case line(UnsafeRawBufferPointer, number: Int, endOffset: Int64)
        /// A line over the limit, skipped; `bytes` is its length.
        case overlong(number: Int, bytes: Int, endOffset: Int64)
    }

    let delimiter: UInt8
    let maxLineBytes: Int
    /// Number of the next line (1-based).
    package private(set) var nextLineNumber = 1
    /// Offset just after the last complete line.
    private(set) var committedOffset: Int64
    private var pending: [UInt8] = []
    private var discarding = false
    private var discardedBytes = 0

    /// `startOffset` and `startLineNumber`: where the stream resumes (a
    /// followed file's committed offset; a resumed `ingestd send` session).
    package init(delimiter: UInt8, maxLineBytes: Int, startOffset: Int64 = 0, startLineNumber: Int = 1) {
        self.delimiter = delimiter
        self.maxLineBytes = maxLineBytes
        self.committedOffset = startOffset
        self.nextLineNumber = startLineNumber
    }

    /// Whether a framed line is blank: empty, or a single space. Blank lines
    /// separate nothing and carry nothing: inputs skip them, never reject.
    package static func isBlank(_ line: UnsafeRawBufferPointer) -> Bool {
        line.isEmpty || (line.count == 1 && line[0] == 0x20)
    }

    /// Bytes of the incomplete line seen so far (counted, not necessarily held).
    var pendingBytes: Int { discarding ? discardedBytes : pending.count }
    /// Bytes actually held in memory for the incomplete line.
    var bufferedBytes: Int { pending.count }
    /// The incomplete line's bytes, to carry a stream over to another
    /// framer; nil while an overlong line is being skipped (not held).
    package var incompleteLine: [UInt8]? { discarding ? nil : pending }

    package mutating func feed(_ chunk: UnsafeRawBufferPointer, _ handle: (Event) throws -> Void) rethrows {
        var start = 0
        let count = chunk.count
        while start < count {
            let rest = UnsafeRawBufferPointer(rebasing: chunk[start...])
            guard let found = firstOffset(of: delimiter, in: rest) else {
                // No delimiter in the rest of the chunk: keep it (bounded).
                if discarding {
                    discardedBytes += rest.count
                } else if pending.count + rest.count > maxLineBytes {
                    discarding = true
                    discardedBytes = pending.count + rest.count
                    pending.removeAll(keepingCapacity: false)
                } else {
                    pending.append(contentsOf: rest)
                }
                return
            }
            let lineEnd = start + found
            let lineBytes = UnsafeRawBufferPointer(rebasing: chunk[start..<lineEnd])
            let consumed = Int64(lineEnd - start + 1)
            let number = nextLineNumber
            nextLineNumber += 1
            if discarding {
                let total = discardedBytes + lineBytes.count
                discarding = false
                discardedBytes = 0
                committedOffset += Int64(total + 1)
                try handle(.overlong(number: number, bytes: total, endOffset: committedOffset))
            } else if pending.isEmpty {
                committedOffset += consumed
                if lineBytes.count > maxLineBytes {
                    try handle(.overlong(number: number, bytes: lineBytes.count, endOffset: committedOffset))
                } else {
                    try handle(.line(trimCR(lineBytes), number: number, endOffset: committedOffset))
                }
            } else {
                let total = pending.count + lineBytes.count
                committedOffset += Int64(total + 1)
                if total > maxLineBytes {
                    pending.removeAll(keepingCapacity: false)
                    try handle(.overlong(number: number, bytes: total, endOffset: committedOffset))
                } else {
                    pending.append(contentsOf: lineBytes)
                    let line = pending
                    pending.removeAll(keepingCapacity: true)
                    try line.withUnsafeBytes {
                        try handle(.line(trimCR($0), number: number, endOffset: committedOffset))
                    }
                }
            }
            start = lineEnd + 1
        }
    }

    /// At end of input: a last line without delimiter is a line (stdin,
    /// serial). File inputs do not call this: a partial last line may still
    /// be being written.
    package mutating func finish(_ handle: (Event) throws -> Void) rethrows {
        let number = nextLineNumber
        if discarding {
            committedOffset += Int64(discardedBytes)
            nextLineNumber += 1
            let total = discardedBytes
            discarding = false
            discardedBytes = 0
            try handle(.overlong(number: number, bytes: total, endOffset: committedOffset))
        } else if !pending.isEmpty {
            committedOffset += Int64(pending.count)
            nextLineNumber += 1
            let line = pending
            pending.removeAll()
            try line.withUnsafeBytes { try handle(.line(trimCR($0), number: number, endOffset: committedOffset)) }
        }
    }

    /// Drops what is buffered (a file was truncated or replaced).
    package mutating func reset(offset: Int64) {
        pending.removeAll()
        discarding = false
        discardedBytes = 0
        committedOffset = offset
    }

    private func trimCR(_ line: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        if let last = line.last, last == 0x0D { return UnsafeRawBufferPointer(rebasing: line.dropLast()) }
        return line
    }
}
