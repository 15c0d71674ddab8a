import EdgeIngestModel

/// One HTTP/1.1 request as the HTTP input's server reads it: the head
/// parsed, the body read whole (bounded by the input's `max_body_bytes`).
package struct HTTPRequest: Sendable {
    package var method: String
    /// The request target as sent: a path with an optional query.
    var target: String
    /// HTTP/1.0 closes after each request unless it asks to keep alive.
    var isHTTP10: Bool
    /// Header names in lower case, in the order received.
    var headers: [(name: String, value: String)]
    var body: [UInt8] = []
    /// With mutual TLS: the common name of the client's verified
    /// certificate (set by the server, never from the request's bytes).
    var clientCertificateName: String?

    /// The path without the query.
    package var path: Substring { target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0] }

    /// The first value of the header `name` (lower case).
    func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }

    /// Whether the connection stays open after this request's answer.
    var keepAlive: Bool {
        // A list, e.g. "TE, close".
        let options = (header("connection") ?? "").lowercased().split(separator: ",").map { $0.trimmingSpaces }
        return isHTTP10 ? options.contains("keep-alive") : !options.contains("close")
    }

    /// The bearer token of the `Authorization` header, if any.
    var bearerToken: String? {
        guard let value = header("authorization") else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1].trimmingSpaces)
    }
}

/// A request the server refuses before handling it: answered with
/// `status` and closed.
struct HTTPRequestError: Error, Sendable, Equatable {
    var status: Int
    var message: String

    /// The `error` word of the JSON answer.
    var code: String {
        switch status {
        case 408: "request_timeout"
        case 411: "length_required"
        case 413: "too_large"
        case 431: "head_too_large"
        case 505: "http_version"
        default: "bad_request"
        }
    }
}

/// Parses the head of an HTTP/1.1 request (request line and headers, up to
/// and excluding the blank line). Pure: the tests call it on bytes, and the
/// fuzz target `scripts/fuzz.sh http` with ``HTTPRequestFramer``.
enum HTTPHeadParser {
    static let maxHeaders = 100

    static func parse(_ head: ArraySlice<UInt8>) throws(HTTPRequestError) -> HTTPRequest {
        var lines = head.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map {
            line -> ArraySlice<UInt8> in
            line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        }
        // RFC 9112 §2.2: a server should ignore empty lines before the request line.
        while lines.first?.isEmpty == true { lines.removeFirst() }
        guard let requestLine = lines.first else { throw HTTPRequestError(status: 400, message: "empty request") }
        let parts = requestLine.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
            throw HTTPRequestError(status: 400, message: "the request line is not 'METHOD target HTTP/1.1'")
        }
        guard parts[0].allSatisfy(isTokenByte) else {
            throw HTTPRequestError(status: 400, message: "the method is not a token")
        }
        guard parts[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw HTTPRequestError(status: 400, message: "the request target has spaces or control characters")
        }
        let version = String(decoding: parts[2], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            throw HTTPRequestError(
                status: 505,
                message: "HTTP version \(quoted(version)) is not supported: use HTTP/1.1"
            )
        }
        var request = HTTPRequest(
            method: String(decoding: parts[0], as: UTF8.self),
            target: String(decoding: parts[1], as: UTF8.self),
            isHTTP10: version == "HTTP/1.0",
            headers: []
        )
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                throw HTTPRequestError(status: 400, message: "a header line has no ':'")
            }
            let name = line[line.startIndex..<colon]
            // No space before the colon (RFC 9112 §5.1) and no obsolete line folding.
            guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
                throw HTTPRequestError(status: 400, message: "a header name is empty or not a token")
            }
            let value = line[(colon + 1)...]
            guard value.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
                throw HTTPRequestError(status: 400, message: "a header value has control characters")
            }
            request.headers.append(
                (
                    String(decoding: name, as: UTF8.self).lowercased(),
                    String(decoding: value, as: UTF8.self).trimmingSpaces
                )
            )
            if request.headers.count > maxHeaders {
                throw HTTPRequestError(status: 431, message: "more than \(maxHeaders) headers")
            }
        }
        if request.header("host") == nil && !request.isHTTP10 {
            throw HTTPRequestError(status: 400, message: "an HTTP/1.1 request needs a Host header")
        }
        return request
    }

    /// The body length the head announces: `Content-Length`, or 0. Refuses
    /// `Transfer-Encoding` (411: clients of the ingest protocol send a
    /// length) and conflicting or malformed lengths (request smuggling).
    static func contentLength(of request: HTTPRequest) throws(HTTPRequestError) -> Int {
        if request.header("transfer-encoding") != nil {
            throw HTTPRequestError(status: 411, message: "chunked bodies are not accepted: send Content-Length")
        }
        let values = request.headers.filter { $0.name == "content-length" }.map(\.value)
        guard let first = values.first else { return 0 }
        guard values.allSatisfy({ $0 == first }), !first.isEmpty, first.utf8.count <= 18,
            first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let length = Int(first)
        else {
            throw HTTPRequestError(status: 400, message: "Content-Length is not one non-negative number")
        }
        return length
    }

    /// RFC 9110 §5.6.2 token characters.
    static func isTokenByte(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default: tokenPunctuation.contains(c)
        }
    }

    private static let tokenPunctuation = Set("!#$%&'*+-.^_`|~".utf8)
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        let bytes = Array(utf8)
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }
}
