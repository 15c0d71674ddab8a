import EdgeIngestModel

/// Cuts HTTP/1.1 requests out of the bytes of one connection: a head up to
/// its blank line (at most `maxHeadBytes`), parsed by ``HTTPHeadParser``,
/// then a body of exactly its `Content-Length` (at most `maxBodyBytes`).
/// Pure — ``HTTPConnection`` feeds it what `recv` returns, however the
/// client's bytes were cut into reads; the fuzz target (`scripts/fuzz.sh
/// http`) feeds it every cut and checks the requests come out the same.
///
/// ```swift
/// var framer = HTTPRequestFramer(maxHeadBytes: 16 * 1024, maxBodyBytes: 2 << 20)
/// framer.append(bytes)
/// if case .request(let request) = framer.next() { … }
/// ```
struct HTTPRequestFramer {
    let maxHeadBytes: Int
    let maxBodyBytes: Int
    /// Bytes received and not yet framed: at most the head limit while a
    /// head is read, at most the body's length (plus what came with it in
    /// the same read) while a body is.
    private(set) var buffer: [UInt8] = []
    /// Where the search for the head's end goes on (the bytes before were searched).
    private var searchFrom = 0
    /// A parsed head whose body is still arriving, and its length.
    private var pending: (request: HTTPRequest, length: Int)?
    /// Whether `100 Continue` was already asked for the pending request.
    private var continueSaid = false

    init(maxHeadBytes: Int, maxBodyBytes: Int) {
        self.maxHeadBytes = maxHeadBytes
        self.maxBodyBytes = maxBodyBytes
    }

    enum Step: Equatable {
        /// Read more. `inBody`: a head was parsed and its body is incomplete
        /// (what a timeout then says).
        case needMore(inBody: Bool)
        /// The head was parsed and its client waits for `100 Continue`
        /// before sending the body: answer it, then read more. Once per request.
        case continueExpected
        case request(HTTPRequest)
        /// Answer this and close: nothing after it on the connection is read.
        case refused(HTTPRequestError)
    }

    /// Whether bytes of a next request (or of one being read) are held.
    var isEmpty: Bool { buffer.isEmpty && pending == nil }

    mutating func append(_ bytes: some Collection<UInt8>) {
        buffer.append(contentsOf: bytes)
    }

    /// The next step: a whole request, a refusal, or what to do to get one.
    mutating func next() -> Step {
        if pending == nil {
            // A head of at most maxHeadBytes ends (CRLFCRLF) within this many bytes.
            let headLimit = maxHeadBytes + 4
            guard let end = findHeadEnd(before: headLimit) else {
                if buffer.count >= headLimit {
                    return .refused(
                        HTTPRequestError(status: 431, message: "the request head is over \(maxHeadBytes) bytes")
                    )
                }
                searchFrom = max(0, buffer.count - 3)
                return .needMore(inBody: false)
            }
            let request: HTTPRequest
            let length: Int
            do throws(HTTPRequestError) {
                request = try HTTPHeadParser.parse(buffer[0..<end])
                length = try HTTPHeadParser.contentLength(of: request)
            } catch {
                return .refused(error)
            }
            buffer.removeFirst(end + 4)
            searchFrom = 0
            if length > maxBodyBytes {
                return .refused(
                    HTTPRequestError(
                        status: 413,
                        message: "the body is \(length) bytes, over this server's max_body_bytes of \(maxBodyBytes)"
                    )
                )
            }
            pending = (request, length)
            continueSaid = false
            // The body's room at once: no doubling growth while it arrives.
            if length > buffer.count { buffer.reserveCapacity(length) }
        }
        let (head, length) = pending!
        guard buffer.count >= length else {
            if !continueSaid, head.header("expect")?.lowercased() == "100-continue" {
                continueSaid = true
                return .continueExpected
            }
            return .needMore(inBody: true)
        }
        var request = head
        if buffer.count == length {
            // Nothing behind it (the usual case): the buffer becomes the body,
            // uncopied, and an idle connection keeps no capacity.
            request.body = buffer
            buffer = []
        } else {
            request.body = Array(buffer[0..<length])
            buffer.removeFirst(length)
        }
        pending = nil
        return .request(request)
    }

    /// Where the blank line ending the head starts, looking at the bytes before `limit` only.
    private func findHeadEnd(before limit: Int) -> Int? {
        let searched = min(buffer.count, limit)
        guard searched >= 4 else { return nil }
        var i = searchFrom
        while i + 3 < searched {
            if buffer[i] == 0x0D && buffer[i + 1] == 0x0A && buffer[i + 2] == 0x0D && buffer[i + 3] == 0x0A { return i }
            i += 1
        }
        return nil
    }
}

extension HTTPRequest: Equatable {
    package static func == (a: HTTPRequest, b: HTTPRequest) -> Bool {
        a.method == b.method && a.target == b.target && a.isHTTP10 == b.isHTTP10 && a.body == b.body
            && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }
}
