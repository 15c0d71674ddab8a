// libFuzzer target: the JetStream sink's reader of a NATS server's byte
// stream (NATSProtocolReader) on anything a server — or something posing
// as one — could send. Built and run by scripts/fuzz.sh.
//
// Checks (a failure is a crash the fuzzer reports):
// - nothing traps, overflows, recurses without bound or leaks;
// - reading does not depend on how the stream is cut into reads: fed whole,
//   byte by byte and in chunks of 7, the same operations come out and the
//   same error, if any;
// - memory stays bounded: the reader never holds more than one control
//   line, one message and one read;
// - a message's payload is never larger than the limit.

@testable import EdgeIngestModel

let maxLine = 256
let maxMessage = 512

/// The operations of `stream` read in chunks of `chunk` bytes, and the error that stopped them, if any.
func operations(_ stream: UnsafeRawBufferPointer, chunk: Int) -> ([NATSServerOperation], String?) {
    var reader = NATSProtocolReader(maxLineBytes: maxLine, maxMessageBytes: maxMessage)
    var out: [NATSServerOperation] = []
    var start = 0
    while start < stream.count {
        let end = min(stream.count, start + chunk)
        reader.append(UnsafeRawBufferPointer(rebasing: stream[start..<end]))
        start = end
        precondition(
            reader.bufferedBytes <= maxLine + 2 + maxMessage + 2 + chunk,
            "the reader holds \(reader.bufferedBytes) bytes"
        )
        do {
            while let operation = try reader.next() {
                if case .message(_, _, let payload) = operation { precondition(payload.count <= maxMessage) }
                out.append(operation)
            }
        } catch {
            return (out, error.message)
        }
    }
    return (out, nil)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzNATS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let stream = UnsafeRawBufferPointer(start: data, count: size)
    let whole = operations(stream, chunk: max(1, size))
    let bytewise = operations(stream, chunk: 1)
    let sevens = operations(stream, chunk: 7)
    precondition(whole.0 == bytewise.0 && whole.0 == sevens.0, "reading depends on the reads")
    precondition(whole.1 == bytewise.1 && whole.1 == sevens.1, "errors depend on the reads")
    return 0
}
