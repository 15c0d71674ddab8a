import EdgeIngestModel
import Testing

/// The NATS client protocol as the JetStream sink reads it: operations cut
/// from a byte stream that arrives in any pieces, in bounded memory.
@Suite struct NATSProtocolReaderTests {
    func operations(_ pieces: [String], reader: inout NATSProtocolReader) throws -> [NATSServerOperation] {
        var out: [NATSServerOperation] = []
        for piece in pieces {
            Array(piece.utf8).withUnsafeBytes { reader.append($0) }
            while let operation = try reader.next() { out.append(operation) }
        }
        return out
    }

    @Test func operationsSplitAnywhereAreReadWhole() throws {
        let stream =
            "INFO {\"max_payload\":1048576}\r\nPING\r\nMSG _INBOX.a.7 1  23\r\n{\"stream\":\"T\", \"seq\":1}\r\n"
            + "HMSG _INBOX.a.8 1 16 16\r\nNATS/1.0 503\r\n\r\n\r\n-ERR 'Permissions Violation for Publish to \"x\"'\r\n+OK\r\nPONG\r\n"
        let expected: [NATSServerOperation] = [
            .info(Array("{\"max_payload\":1048576}".utf8)), .ping,
            .message(subject: "_INBOX.a.7", status: nil, payload: Array("{\"stream\":\"T\", \"seq\":1}".utf8)),
            .message(subject: "_INBOX.a.8", status: 503, payload: []),
            .error("Permissions Violation for Publish to \"x\""), .ok, .pong,
        ]
        // Whole, and cut at every byte.
        var whole = NATSProtocolReader()
        #expect(try operations([stream], reader: &whole) == expected)
        var bytewise = NATSProtocolReader()
        #expect(try operations(stream.map { String($0) }, reader: &bytewise) == expected)
        #expect(bytewise.bufferedBytes == 0)
    }

    @Test func aMessageLargerThanTheLimitIsAnErrorNotABuffer() {
        var reader = NATSProtocolReader(maxLineBytes: 64, maxMessageBytes: 100)
        #expect(throws: NATSProtocolError.self) { _ = try operations(["MSG a 1 5000\r\n"], reader: &reader) }
        var long = NATSProtocolReader(maxLineBytes: 64, maxMessageBytes: 100)
        #expect(throws: NATSProtocolError.self) {
            _ = try operations([String(repeating: "I", count: 200)], reader: &long)
        }
    }

    @Test func whatIsNotNATSSaysSo() {
        var reader = NATSProtocolReader()
        #expect(throws: NATSProtocolError("the server sent an unknown operation 'HTTP/1.1': is this a NATS server?")) {
            _ = try operations(["HTTP/1.1 400 Bad Request\r\n"], reader: &reader)
        }
        var malformed = NATSProtocolReader()
        #expect(throws: NATSProtocolError.self) { _ = try operations(["MSG a b\r\n"], reader: &malformed) }
        var badEnd = NATSProtocolReader()
        #expect(throws: NATSProtocolError.self) { _ = try operations(["MSG a 1 2\r\nabcd\r\n"], reader: &badEnd) }
    }
}
