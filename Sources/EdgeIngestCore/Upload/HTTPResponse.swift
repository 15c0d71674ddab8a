/// One HTTP response as the uploader and the login client need it (what
/// ``CurlTransport`` returns; the HTTP input answers with the agent's
/// `HTTPServerResponse`).
public struct HTTPResponse: Sendable {
    public var status: Int
    /// Header names lowercased; the last value wins.
    public var headers: [String: String]
    public var body: [UInt8]
}
