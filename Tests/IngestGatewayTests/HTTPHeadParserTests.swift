import Testing

@testable import IngestGateway

/// Proves that `HTTPHeadParser` turns a request head into method, target,
/// version and lower-cased headers, refuses malformed heads with the right
/// status (400, 431, 505), reads `Content-Length` strictly (smuggling
/// guards, 411 for chunked bodies), and that `HTTPRequest`'s derived values
/// (`path`, `keepAlive`, `bearerToken`) follow HTTP/1.0 and 1.1 rules.
@Suite struct HTTPHeadParserTests {
    /// Parses `text` as the connection passes a head: up to, not including,
    /// the CRLF CRLF that ends it. Tests write the last header line with its
    /// CRLF for readability; that CRLF is the first half of the terminator.
    func parse(_ text: String) throws(HTTPRequestError) -> HTTPRequest {
        var bytes = Array(text.utf8)
        if bytes.suffix(2) == [0x0D, 0x0A] { bytes.removeLast(2) }
        return try HTTPHeadParser.parse(ArraySlice(bytes))
    }

    /// The status and message a head is refused with, or nil if accepted.
    func refusal(_ text: String) -> HTTPRequestError? {
        do throws(HTTPRequestError) {
            _ = try parse(text)
            return nil
        } catch {
            return error
        }
    }

    func lengthRefusal(_ request: HTTPRequest) -> HTTPRequestError? {
        do throws(HTTPRequestError) {
            _ = try HTTPHeadParser.contentLength(of: request)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Accepted heads

    @Test func aRequestLineAndHeadersAreParsed() throws {
        let request = try parse(
            "POST /ingest/v1/batches?app=x HTTP/1.1\r\nHost: gw.local:8080\r\nContent-Type:  application/x-ndjson \r\nX-Empty:\r\n"
        )
        #expect(request.method == "POST")
        #expect(request.target == "/ingest/v1/batches?app=x")
        #expect(request.isHTTP10 == false)
        #expect(request.headers.map(\.name) == ["host", "content-type", "x-empty"])
        #expect(request.headers.map(\.value) == ["gw.local:8080", "application/x-ndjson", ""])
        #expect(request.body.isEmpty)
    }

    @Test func headerNamesAreLowerCasedAndTheFirstValueWins() throws {
        let request = try parse("GET / HTTP/1.1\r\nHOST: a\r\nX-Tag: one\r\nx-tag: two\r\n")
        #expect(request.header("host") == "a")
        #expect(request.header("x-tag") == "one")
        #expect(request.header("X-Tag") == nil)  // lookups are by the lower-case name
        #expect(request.headers.filter { $0.name == "x-tag" }.map(\.value) == ["one", "two"])
    }

    @Test func valuesKeepInnerSpacesTabsAndNonASCIIButLoseOuterWhitespace() throws {
        let request = try parse("GET / HTTP/1.1\r\nHost: h\r\nX-A: \t a \t b \t\r\nX-B: caf\u{e9}\r\n")
        #expect(request.header("x-a") == "a \t b")
        #expect(request.header("x-b") == "caf\u{e9}")
    }

    @Test func bareLineFeedsAndLeadingEmptyLinesAreAccepted() throws {
        let request = try parse("\r\n\n\r\nGET /x HTTP/1.1\nHost: h")
        #expect(request.method == "GET")
        #expect(request.target == "/x")
        #expect(request.header("host") == "h")
    }

    @Test func http10NeedsNoHost() throws {
        let request = try parse("GET / HTTP/1.0\r\n")
        #expect(request.isHTTP10)
        #expect(request.headers.isEmpty)
    }

    @Test func exactlyTheMaximumNumberOfHeadersIsAccepted() throws {
        let headers = (1..<HTTPHeadParser.maxHeaders).map { "X-\($0): v\r\n" }.joined()
        let request = try parse("GET / HTTP/1.1\r\nHost: h\r\n" + headers)
        #expect(request.headers.count == HTTPHeadParser.maxHeaders)
    }

    // MARK: Refused heads

    @Test(arguments: [
        ("", "empty request"),
        ("\r\n\r\n", "empty request"),
        ("GET /\r\nHost: h", "the request line is not 'METHOD target HTTP/1.1'"),
        ("GET  / HTTP/1.1\r\nHost: h", "the request line is not 'METHOD target HTTP/1.1'"),
        ("GET / HTTP/1.1 \r\nHost: h", "the request line is not 'METHOD target HTTP/1.1'"),
        (" / HTTP/1.1\r\nHost: h", "the request line is not 'METHOD target HTTP/1.1'"),
        ("GE(T / HTTP/1.1\r\nHost: h", "the method is not a token"),
        ("GET /a\u{7F}b HTTP/1.1\r\nHost: h", "the request target has spaces or control characters"),
        ("GET /caf\u{e9} HTTP/1.1\r\nHost: h", "the request target has spaces or control characters"),
        ("GET /a\tb HTTP/1.1\r\nHost: h", "the request target has spaces or control characters"),
        ("GET / HTTP/1.1\r\nHost h", "a header line has no ':'"),
        ("GET / HTTP/1.1\r\nHost : h", "a header name is empty or not a token"),
        ("GET / HTTP/1.1\r\n: h\r\nHost: h", "a header name is empty or not a token"),
        ("GET / HTTP/1.1\r\nHost: h\r\nX-A: one\r\n  folded: two", "a header name is empty or not a token"),
        ("GET / HTTP/1.1\r\nHost: h\r\nX-A: one\r\n two", "a header line has no ':'"),
        ("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\u{1}b", "a header value has control characters"),
        ("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\rb", "a header value has control characters"),
        ("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\u{7F}", "a header value has control characters"),
        ("GET / HTTP/1.1\r\nX-A: b", "an HTTP/1.1 request needs a Host header"),
        ("GET / HTTP/1.1", "an HTTP/1.1 request needs a Host header"),
    ])
    func malformedHeadsAreRefusedWith400(head: String, message: String) {
        #expect(refusal(head) == HTTPRequestError(status: 400, message: message))
    }

    @Test(arguments: ["HTTP/2.0", "HTTP/1.2", "http/1.1", "HTTP/0.9"])
    func otherVersionsAreRefusedWith505(version: String) {
        let error = refusal("GET / \(version)\r\nHost: h")
        #expect(error?.status == 505)
        #expect(error?.message == "HTTP version \"\(version)\" is not supported: use HTTP/1.1")
    }

    @Test func aLongVersionIsQuotedShort() {
        let error = refusal("GET / HTTP/" + String(repeating: "9", count: 500) + "\r\nHost: h")
        #expect(error?.status == 505)
        #expect(
            error?.message == "HTTP version \"HTTP/" + String(repeating: "9", count: 27)
                + "…\" is not supported: use HTTP/1.1"
        )
    }

    /// The version is the client's text and goes to the log: a terminal
    /// escape in it must arrive escaped.
    @Test func aVersionWithControlCharactersIsEscaped() {
        let error = refusal("GET / HTTP/1.1\u{1b}[2J\r\nHost: h")
        #expect(error?.status == 505)
        #expect(error?.message == #"HTTP version "HTTP/1.1\u{1b}[2J" is not supported: use HTTP/1.1"#)
    }

    @Test func oneHeaderOverTheMaximumIsRefusedWith431() {
        let headers = (0..<HTTPHeadParser.maxHeaders).map { "X-\($0): v\r\n" }.joined()
        #expect(
            refusal("GET / HTTP/1.1\r\nHost: h\r\n" + headers)
                == HTTPRequestError(status: 431, message: "more than 100 headers")
        )
    }

    // MARK: Content-Length

    @Test(arguments: [
        ("", 0),
        ("Content-Length: 0\r\n", 0),
        ("Content-Length: 42\r\n", 42),
        ("Content-Length:  42 \r\n", 42),
        ("Content-Length: 007\r\n", 7),
        ("Content-Length: 42\r\ncontent-length: 42\r\n", 42),
        ("Content-Length: 999999999999999999\r\n", 999_999_999_999_999_999),
    ])
    func contentLengthIsReadWhenUnambiguous(headers: String, length: Int) throws {
        let request = try parse("POST / HTTP/1.1\r\nHost: h\r\n" + headers)
        #expect(try HTTPHeadParser.contentLength(of: request) == length)
    }

    @Test(arguments: [
        "Content-Length: 42\r\nContent-Length: 43\r\n",
        "Content-Length: -1\r\n",
        "Content-Length: +5\r\n",
        "Content-Length: \r\n",
        "Content-Length: 1e3\r\n",
        "Content-Length: 0x10\r\n",
        "Content-Length: 5, 5\r\n",
        "Content-Length: 4 2\r\n",
        "Content-Length: 1000000000000000000\r\n",  // 19 digits
        "Content-Length: \u{661}\r\n",  // an Arabic-Indic digit one
    ])
    func ambiguousOrMalformedLengthsAreRefusedWith400(headers: String) throws {
        let request = try parse("POST / HTTP/1.1\r\nHost: h\r\n" + headers)
        #expect(
            lengthRefusal(request)
                == HTTPRequestError(status: 400, message: "Content-Length is not one non-negative number")
        )
    }

    @Test(arguments: [
        "Transfer-Encoding: chunked\r\n", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
        "Content-Length: 5\r\ntransfer-encoding: identity\r\n",
    ])
    func anyTransferEncodingIsRefusedWith411(headers: String) throws {
        let request = try parse("POST / HTTP/1.1\r\nHost: h\r\n" + headers)
        #expect(
            lengthRefusal(request)
                == HTTPRequestError(status: 411, message: "chunked bodies are not accepted: send Content-Length")
        )
    }

    // MARK: Derived values

    @Test(arguments: [
        ("/ingest/v1/batches?app=x&y=1", "/ingest/v1/batches"),
        ("/ingest/v1/batches", "/ingest/v1/batches"),
        ("/a?b?c", "/a"),
        ("/?", "/"),
        ("?q", ""),
    ])
    func pathDropsTheQuery(target: String, path: String) throws {
        #expect(try parse("GET \(target) HTTP/1.1\r\nHost: h").path == Substring(path))
    }

    @Test(
        arguments: [
            ("HTTP/1.1", nil, true),
            ("HTTP/1.1", "close", false),
            ("HTTP/1.1", "Close", false),
            ("HTTP/1.1", "keep-alive", true),
            ("HTTP/1.0", nil, false),
            ("HTTP/1.0", "keep-alive", true),
            ("HTTP/1.0", "Keep-Alive", true),
            ("HTTP/1.0", "close", false),
        ] as [(String, String?, Bool)]
    )
    func keepAliveFollowsTheVersionAndConnectionHeader(version: String, connection: String?, keepAlive: Bool) throws {
        let request = try parse("GET / \(version)\r\nHost: h\r\n" + (connection.map { "Connection: \($0)\r\n" } ?? ""))
        #expect(request.keepAlive == keepAlive)
    }

    @Test(
        arguments: [
            ("Bearer abc.def-1", "abc.def-1"),
            ("bearer abc", "abc"),
            ("BEARER abc", "abc"),
            ("Bearer  \tabc", "abc"),
            ("Bearer", nil),
            ("Bearer ", nil),
            ("Basic dXNlcjpwYXNz", nil),
            ("Bearerabc", nil),
        ] as [(String, String?)]
    )
    func bearerTokenIsTheSecondWordOfABearerAuthorization(authorization: String, token: String?) throws {
        let request = try parse("GET / HTTP/1.1\r\nHost: h\r\nAuthorization: \(authorization)\r\n")
        #expect(request.bearerToken == token)
    }

    @Test func noAuthorizationHeaderMeansNoBearerToken() throws {
        #expect(try parse("GET / HTTP/1.1\r\nHost: h\r\n").bearerToken == nil)
    }

    @Test func tokenBytesAreTheRFC9110Set() {
        let token = Set(Array("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8))
        for byte in UInt8.min...UInt8.max {
            #expect(HTTPHeadParser.isTokenByte(byte) == token.contains(byte), "byte \(byte)")
        }
    }
}
