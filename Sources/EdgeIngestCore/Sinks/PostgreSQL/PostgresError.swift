/// What went wrong talking to PostgreSQL. The message never holds a value
/// from a record: data errors (SQLSTATE classes 22 and 23, whose server
/// messages quote the offending value) carry only their SQLSTATE.
package struct PostgresError: Error, CustomStringConvertible {
    package enum Kind: Equatable {
        /// libpq missing or the sink configured wrongly.
        case configuration
        /// Connecting failed, or the connection broke.
        case connection
        /// No answer within `timeout_ms`.
        case timeout
        /// The server refused a statement with this SQLSTATE.
        case server(sqlState: String)
    }

    package var kind: Kind
    package var message: String

    package var description: String { message }

    /// A server error: the SQLSTATE and, except for data errors, the
    /// server's primary message (one line, at most 200 characters).
    static func server(sqlState: String, primaryMessage: String) -> PostgresError {
        let quotesData = sqlState.hasPrefix("22") || sqlState.hasPrefix("23")
        let message = quotesData ? "" : ": " + oneLine(primaryMessage)
        return PostgresError(kind: .server(sqlState: sqlState), message: "PostgreSQL error \(sqlState)\(message)")
    }

    /// libpq's message with the password and every quoted piece of the
    /// connection URL taken out: a URL libpq cannot parse is quoted back
    /// (`invalid percent-encoded token: "pa%zz"`, `missing "=" after "w0rd"`),
    /// password and all. The URL is shown redacted beside it.
    static func withoutSecrets(_ message: String, url: String, password: String?) -> String {
        var text = message
        if let password, !password.isEmpty { text = text.replacing(password, with: "***") }
        var out = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "\""), let close = rest[rest.index(after: open)...].firstIndex(of: "\"") {
            let inside = rest[rest.index(after: open)..<close]
            out += rest[...open]
            out += inside.count > 1 && url.contains(inside) ? "(from upload.url)" : String(inside)
            out += "\""
            rest = rest[rest.index(after: close)...]
        }
        return out + rest
    }

    /// libpq's multi-line messages as one line for the journal.
    static func oneLine(_ text: String) -> String {
        String(text.split(whereSeparator: \.isWhitespace).joined(separator: " ").prefix(200))
    }
}
