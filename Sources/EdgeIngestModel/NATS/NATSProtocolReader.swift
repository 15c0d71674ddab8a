/// One operation a NATS server sends (the client protocol, docs.nats.io
/// "Client Protocol"): what the JetStream sink needs of it.
package enum NATSServerOperation: Equatable, Sendable {
    /// The server's description of itself (a JSON object, as sent).
    case info([UInt8])
    /// A message for one of our subscriptions: its subject, the status of a
    /// header block (`503` for "no responders"; nil without headers or
    /// status), and its payload.
    case message(subject: String, status: Int?, payload: [UInt8])
    case ping, pong, ok
    /// `-ERR 'text'`: the text without its quotes.
    case error(String)
}

/// Why the bytes from a server are not the NATS protocol (or are larger
/// than the reader keeps).
package struct NATSProtocolError: Error, Equatable, Sendable, CustomStringConvertible {
    package let message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}

/// Cuts the byte stream from a NATS server into operations, in bounded
/// memory: a control line longer than ``maxLineBytes`` or a message larger
/// than ``maxMessageBytes`` is a protocol error (the connection is then
/// closed), never an unbounded buffer.
///
///     var reader = NATSProtocolReader()
///     reader.append(chunk)
///     while let operation = try reader.next() { … }
package struct NATSProtocolReader {
    /// The longest control line (`INFO` of a large cluster lists every
    /// member's URL: tens of kilobytes at most).
    package let maxLineBytes: Int
    /// The largest message taken (the sink's answers are acknowledgements
    /// and stream descriptions of a few kilobytes).
    package let maxMessageBytes: Int
    private var buffer: [UInt8] = []
    private var position = 0

    package init(maxLineBytes: Int = 256 * 1024, maxMessageBytes: Int = 4 << 20) {
        self.maxLineBytes = maxLineBytes
        self.maxMessageBytes = maxMessageBytes
    }

    /// Bytes held and not yet returned as operations.
    package var bufferedBytes: Int { buffer.count - position }

    /// Adds bytes read from the connection.
    package mutating func append(_ chunk: UnsafeRawBufferPointer) {
        if position == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
            position = 0
        } else if position >= 64 * 1024 {
            buffer.removeFirst(position)
            position = 0
        }
        buffer.append(contentsOf: chunk)
    }

    /// The next whole operation, or nil until more bytes arrive.
    package mutating func next() throws(NATSProtocolError) -> NATSServerOperation? {
        var found = lineEnd()
        // Empty lines are skipped (in a loop: a stream of them must not recurse).
        while let end = found, end == position {
            position = end + 2
            found = lineEnd()
        }
        guard let lineEnd = found else {
            // The line and its CRLF: a line of exactly the limit waits for its LF.
            if buffer.count - position > maxLineBytes + 2 {
                throw NATSProtocolError("the server sent a control line longer than \(maxLineBytes) bytes")
            }
            return nil
        }
        let line = buffer[position..<lineEnd]
        let words = line.split(separator: UInt8(ascii: " "), maxSplits: 6, omittingEmptySubsequences: true)
        guard let verb = words.first else {
            throw NATSProtocolError("the server sent a line of spaces")
        }
        switch Self.upper(verb) {
        case "MSG", "HMSG":
            let headers = Self.upper(verb) == "HMSG"
            // MSG <subject> <sid> [reply] <#bytes>; HMSG <subject> <sid> [reply] <#header bytes> <#total bytes>
            let sizes = headers ? 2 : 1
            guard words.count == 3 + sizes || words.count == 4 + sizes,
                let total = Self.number(words[words.count - 1]),
                let headerBytes = headers ? Self.number(words[words.count - 2]) : 0,
                headerBytes <= total
            else {
                throw NATSProtocolError("the server sent a malformed \(Self.upper(verb)) line")
            }
            guard total <= maxMessageBytes else {
                throw NATSProtocolError(
                    "the server sent a message of \(total) bytes (at most \(maxMessageBytes) taken)"
                )
            }
            let bodyStart = lineEnd + 2
            guard buffer.count - bodyStart >= total + 2 else { return nil }
            guard buffer[bodyStart + total] == 13, buffer[bodyStart + total + 1] == 10 else {
                throw NATSProtocolError("a message from the server does not end with CRLF where its size says")
            }
            let subject = String(decoding: words[1], as: UTF8.self)
            let status = headers ? Self.status(buffer[bodyStart..<(bodyStart + headerBytes)]) : nil
            let payload = Array(buffer[(bodyStart + headerBytes)..<(bodyStart + total)])
            position = bodyStart + total + 2
            return .message(subject: subject, status: status, payload: payload)
        case "PING":
            position = lineEnd + 2
            return .ping
        case "PONG":
            position = lineEnd + 2
            return .pong
        case "+OK":
            position = lineEnd + 2
            return .ok
        case "-ERR":
            var text = String(decoding: line.dropFirst(4), as: UTF8.self)
            text = String(text.drop { $0 == " " })
            if text.hasPrefix("'"), text.hasSuffix("'"), text.count >= 2 { text = String(text.dropFirst().dropLast()) }
            position = lineEnd + 2
            return .error(String(text.prefix(300)))
        case "INFO":
            let json = Array(line.dropFirst(4).drop { $0 == UInt8(ascii: " ") })
            position = lineEnd + 2
            return .info(json)
        default:
            throw NATSProtocolError(
                "the server sent an unknown operation '\(String(decoding: verb.prefix(16), as: UTF8.self))': is this a NATS server?"
            )
        }
    }

    /// Where the line at `position` ends (its CR), or nil.
    private func lineEnd() -> Int? {
        var i = position
        let end = min(buffer.count, position + maxLineBytes + 2)
        while i + 1 < end {
            if buffer[i] == 13, buffer[i + 1] == 10 { return i }
            i += 1
        }
        return nil
    }

    private static func upper(_ word: ArraySlice<UInt8>) -> String {
        String(decoding: word.prefix(8).map { $0 >= 97 && $0 <= 122 ? $0 - 32 : $0 }, as: UTF8.self)
    }

    private static func number(_ word: ArraySlice<UInt8>) -> Int? {
        guard !word.isEmpty, word.count <= 12 else { return nil }
        var n = 0
        for byte in word {
            guard byte >= 48, byte <= 57 else { return nil }
            n = n * 10 + Int(byte - 48)
        }
        return n
    }

    /// The status code of a header block's first line (`NATS/1.0 503`), if it has one.
    private static func status(_ block: ArraySlice<UInt8>) -> Int? {
        guard let end = block.firstIndex(of: 13) else { return nil }
        let words = block[..<end].split(separator: UInt8(ascii: " "), maxSplits: 2)
        guard words.count >= 2 else { return nil }
        return number(words[1])
    }
}
