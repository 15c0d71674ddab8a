/// The error the gateway throws when it cannot start serving: an address
/// it cannot listen on, TLS files it cannot use, an accounts file or token
/// key it cannot read. (A request the gateway refuses is not an error of
/// this kind: it is answered, `BatchRefusal` → an HTTP status.)
///
/// Like `EdgeIngestError` and the agent's `AgentError`: a ``code`` to match
/// on, a ``message`` that says what happened and what to do, and where it
/// was thrown. Messages never hold keys, tokens or passwords.
///
/// ```swift
/// do {
///     let server = try HTTPServer(address: "0.0.0.0:8480", limits: HTTPLimits(), maxConnections: 512, handler: handler, logger: logger)
/// } catch let error as GatewayError where error.code == .listenFailed {
///     print(error.message)   // Cannot listen on 0.0.0.0:8480: Address already in use. Is another process using the port?
/// }
/// ```
package struct GatewayError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    package enum Code: String, Sendable {
        /// The address cannot be listened on, or its TLS files cannot be used.
        case listenFailed = "listen_failed"
        /// An accounts file (API keys, users) or the token key cannot be used.
        case unusableFile = "unusable_file"
    }

    /// What kind of failure this is.
    package let code: Code
    /// A sentence saying what happened and, where possible, how to fix it.
    package let message: String
    /// Where in the gateway the error was thrown (`IngestGateway/HTTP/HTTPServer.swift:60`).
    package let location: String

    package init(_ code: Code, _ message: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.location = "\(file):\(line)"
    }

    package var description: String { message }
}
