import Testing

@testable import IngestGateway

/// Every status the HTTP input answers carries its own reason phrase in
/// the status line (a 429 read "429 Status" before issue 38).
@Suite struct HTTPReasonPhraseTests {
    @Test(arguments: [
        (200, "OK"), (204, "No Content"), (400, "Bad Request"), (401, "Unauthorized"), (403, "Forbidden"),
        (404, "Not Found"), (405, "Method Not Allowed"), (408, "Request Timeout"), (409, "Conflict"),
        (411, "Length Required"), (413, "Content Too Large"), (415, "Unsupported Media Type"),
        (429, "Too Many Requests"), (431, "Request Header Fields Too Large"), (500, "Internal Server Error"),
        (501, "Not Implemented"), (502, "Bad Gateway"), (503, "Service Unavailable"),
        (505, "HTTP Version Not Supported"),
    ])
    func eachStatusHasItsReasonPhrase(status: Int, phrase: String) {
        #expect(HTTPServerResponse.reason(status) == phrase)
    }
}
