/// Why one input line was not accepted: a stable reason (a counter key) and
/// a message that says what was expected. Messages quote at most a short,
/// truncated excerpt of the line, never the whole payload.
public struct LineRejection: Error, Sendable, Hashable {
    public var reason: String
    public var message: String

    public init(reason: String, message: String) {
        self.reason = reason
        self.message = message
    }

    static func malformedJSON(_ offset: Int, _ what: String) -> LineRejection {
        LineRejection(reason: "malformed_json", message: "malformed JSON at byte \(offset + 1): \(what)")
    }
}
