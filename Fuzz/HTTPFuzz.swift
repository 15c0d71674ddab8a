// libFuzzer target: bytes from a client of the HTTP input (the gateway)
// through its request framing and parsing as HTTPConnection runs them:
// HTTPRequestFramer (head up to its blank line, then a Content-Length body)
// and HTTPHeadParser, then the gzip decoding of a gzip body. Compiled with
// Sources/IngestAgent/HTTP/HTTPRequest.swift, HTTPRequestFramer.swift and
// Sources/EdgeIngestCore/Upload/Gzip.swift by scripts/fuzz.sh.
//
// Checks (a failure is a crash the fuzzer reports):
// - nothing traps and ASan sees no bad access or leak;
// - the same requests (method, target, headers, body) and the same refusal
//   come out whether the bytes arrive at once, byte by byte, or in chunks
//   the input chooses (split heads, a body in pieces, pipelined requests);
// - memory held is bounded: while a head is read, less than the head limit;
//   while a body is, less than its announced length;
// - a refusal is one of the statuses the server answers (400, 411, 413,
//   431, 505) with a short message; smuggling shapes are refused
//   (Transfer-Encoding, conflicting or malformed Content-Length), and so
//   is an HTTP/2 preface;
// - an accepted request is well formed: a token method, a target without
//   spaces or controls, lower-case token header names, values without
//   CR/LF, a body of exactly its Content-Length, Host on HTTP/1.1;
// - a gzip body decodes to at most the body limit, or is refused (a gzip
//   bomb costs no more memory than the limit).

let maxHeadBytes = 512
let maxBodyBytes = 1024

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTP(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let whole = frame(input, cuts: [input.count])
    let byteByByte = frame(input, cuts: [Int](repeating: 1, count: input.count))
    // Chunk sizes chosen by the input's own bytes, so the fuzzer explores cuts.
    let chosen = frame(input, cuts: input.map { Int($0 % 17) + 1 })
    precondition(whole == byteByByte, "framing differs when the bytes arrive one by one")
    precondition(whole == chosen, "framing differs with other read sizes")
    for request in whole.requests { checkRequest(request) }
    if let refusal = whole.refusal { checkRefusal(refusal) }
    return 0
}

/// What a connection made of the bytes: its requests, then the refusal
/// that closed it (if any).
struct Framed: Equatable {
    var requests: [HTTPRequest] = []
    var refusal: HTTPRequestError?
}

/// Feeds `input` in reads of the sizes in `cuts` (cycled), as `recv` would
/// return them, taking every step the framer gives after each read.
func frame(_ input: [UInt8], cuts: [Int]) -> Framed {
    var framer = HTTPRequestFramer(maxHeadBytes: maxHeadBytes, maxBodyBytes: maxBodyBytes)
    var framed = Framed()
    var offset = 0
    var cut = 0
    while true {
        switch framer.next() {
        case .request(let request):
            framed.requests.append(request)
            continue
        case .refused(let error):
            framed.refusal = error
            return framed
        case .continueExpected:
            continue
        case .needMore(let inBody):
            if inBody {
                precondition(framer.buffer.count < maxBodyBytes, "a body's bytes held beyond its length")
            } else {
                precondition(framer.buffer.count < maxHeadBytes + 4, "head bytes held beyond the head limit")
            }
        }
        guard offset < input.count, !cuts.isEmpty else { return framed }
        let n = min(max(1, cuts[cut % cuts.count]), input.count - offset)
        framer.append(input[offset..<offset + n])
        offset += n
        cut += 1
    }
}

func checkRefusal(_ error: HTTPRequestError) {
    precondition([400, 411, 413, 431, 505].contains(error.status), "refused with status \(error.status)")
    precondition(!error.message.isEmpty && error.message.utf8.count <= 300, "a refusal's message is empty or long")
}

func checkRequest(_ request: HTTPRequest) {
    precondition(!request.method.isEmpty && request.method.utf8.allSatisfy(HTTPHeadParser.isTokenByte), "method")
    precondition(!request.target.isEmpty && request.target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }, "target")
    precondition(request.headers.count <= HTTPHeadParser.maxHeaders, "too many headers taken")
    for (name, value) in request.headers {
        precondition(!name.isEmpty && name.utf8.allSatisfy(HTTPHeadParser.isTokenByte), "header name")
        precondition(name == name.lowercased(), "a header name not in lower case")
        precondition(!value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }, "CR, LF or NUL in a value")
    }
    precondition(request.header("transfer-encoding") == nil, "a Transfer-Encoding request was taken")
    precondition(request.isHTTP10 || request.header("host") != nil, "HTTP/1.1 without Host taken")
    let lengths = Set(request.headers.filter { $0.name == "content-length" }.map(\.value))
    precondition(lengths.count <= 1, "conflicting Content-Length values taken")
    precondition(request.body.count == (lengths.first.flatMap { Int($0) } ?? 0), "a body not of its length")
    precondition(request.body.count <= maxBodyBytes, "a body over the limit")
    if request.header("content-encoding")?.lowercased() == "gzip" {
        if let decoded = try? Gzip.decompress(request.body, limit: maxBodyBytes) {
            precondition(decoded.count <= maxBodyBytes, "a gzip body decoded past the limit")
        }
    }
}
