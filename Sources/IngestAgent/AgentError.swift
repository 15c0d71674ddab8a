/// The error the agent's own parts throw (the library throws
/// ``EdgeIngestError``; a configuration file that cannot be used,
/// ``ConfigurationError``).
///
/// Like ``EdgeIngestError``: a ``code`` to match on, a ``message`` that says
/// what happened and what to do, an optional ``cause``, and where it was
/// thrown. Messages never hold readings, tokens or passwords.
///
/// ```swift
/// do {
///     try await Agent(configuration: configuration, logger: logger).run()
/// } catch let error as AgentError where error.code == .listenFailed {
///     print(error.message)   // Cannot listen on 0.0.0.0:8480: … Is another process using the port?
/// }
/// ```
package struct AgentError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is. New codes may be added in any release.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Kind: String, Sendable {
            case inputFailed = "input_failed"
            case unusableFile = "unusable_file"
            case listenFailed = "listen_failed"
            case readingsLost = "readings_lost"
        }
        fileprivate let kind: Kind

        /// An input could not be read (stdin, a followed file, a serial device).
        package static let inputFailed = Code(kind: .inputFailed)
        /// A file the configuration names cannot be used: the rejects file,
        /// a gateway's accounts file or token key.
        package static let unusableFile = Code(kind: .unusableFile)
        /// The HTTP input cannot listen on its address.
        package static let listenFailed = Code(kind: .listenFailed)
        /// Readings an input had read could not be committed before a stop.
        package static let readingsLost = Code(kind: .readingsLost)

        /// A short, stable, payload-free name, safe as a metric label: `listen_failed`.
        package var description: String { kind.rawValue }
    }

    /// What kind of failure this is.
    package let code: Code
    /// A sentence saying what happened and, where possible, how to fix it.
    package let message: String
    /// The underlying error, if another layer failed first.
    package let cause: (any Error & Sendable)?
    /// Where in the agent the error was thrown (`IngestAgent/Inputs/SocketInput.swift:151`).
    package let location: String

    package init(
        _ code: Code,
        _ message: String,
        cause: (any Error & Sendable)? = nil,
        file: String = #fileID,
        line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.cause = cause
        self.location = "\(file):\(line)"
    }

    package var description: String {
        if let cause { return "\(message) (cause: \(cause))" }
        return message
    }
}
