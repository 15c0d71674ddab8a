import EdgeIngestCore

/// An answer of the HTTP input's server.
package struct HTTPServerResponse: Sendable {
    var status: Int
    var headers: [(name: String, value: String)] = []
    var body: [UInt8] = []
    /// Set by the handler when the request carried valid credentials: the
    /// connection is then one a slow, unauthenticated newcomer cannot take
    /// the place of (``HTTPAdmission``).
    var trustsClient = false

    init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A plain-text answer.
    package static func text(
        _ status: Int,
        _ text: String,
        contentType: String = "text/plain; charset=utf-8",
        headers: [(name: String, value: String)] = []
    ) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: [("Content-Type", contentType)] + headers, body: Array(text.utf8))
    }

    /// A JSON answer; `fields` are written in order (strings escaped).
    static func json(
        _ status: Int,
        _ fields: KeyValuePairs<String, JSONValue>,
        headers: [(name: String, value: String)] = []
    ) -> HTTPServerResponse {
        json(status, object: fields.map { ($0.key, $0.value) }, headers: headers)
    }

    static func json(
        _ status: Int,
        object fields: [(String, JSONValue)],
        headers: [(name: String, value: String)] = []
    ) -> HTTPServerResponse {
        var body: [UInt8] = []
        JSONValue.object(fields).write(to: &body)
        return HTTPServerResponse(status: status, headers: [("Content-Type", "application/json")] + headers, body: body)
    }

    /// `{"error": code, "message": message}`.
    static func error(
        _ status: Int,
        _ code: String,
        _ message: String,
        headers: [(name: String, value: String)] = []
    ) -> HTTPServerResponse {
        json(status, ["error": .string(code), "message": .string(message)], headers: headers)
    }

    /// The bytes on the wire, as the answer to `request` (nil: a request
    /// refused before it was parsed). A HEAD answer has the length but no
    /// body; 1xx and 204 have neither (RFC 9110 §8.6); an HTTP/1.0 client
    /// that asked to keep the connection is told it is kept.
    func serialized(for request: HTTPRequest?, keepAlive: Bool) -> [UInt8] {
        var head = "HTTP/1.1 \(status) \(HTTPServerResponse.reason(status))\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let bodyless = status < 200 || status == 204
        if !bodyless { head += "Content-Length: \(body.count)\r\n" }
        if !keepAlive {
            head += "Connection: close\r\n"
        } else if request?.isHTTP10 == true {
            head += "Connection: keep-alive\r\n"
        }
        head += "\r\n"
        return Array(head.utf8) + (bodyless || request?.method == "HEAD" ? [] : body)
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 204: "No Content"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 411: "Length Required"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 502: "Bad Gateway"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }
}
