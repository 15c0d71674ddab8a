/// One thing wrong in a configuration file: where, which key, what.
public struct ConfigurationProblem: Sendable, Hashable, CustomStringConvertible {
    public var line: Int?
    public var key: String
    public var message: String

    public var description: String {
        (line.map { "line \($0): " } ?? "") + (key.isEmpty ? "" : "\(key): ") + message
    }
}

/// A configuration file that cannot be used, with every problem found in it.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var problems: [ConfigurationProblem]

    public var description: String {
        let head = problems.count == 1 ? "1 problem" : "\(problems.count) problems"
        return "The configuration '\(path)' has \(head):\n" + problems.map { "  \(path):\($0)" }.joined(separator: "\n")
    }
}
