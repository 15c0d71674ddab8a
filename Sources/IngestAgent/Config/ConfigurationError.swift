/// One thing wrong in a configuration file: where, which key, what.
public struct ConfigurationProblem: Sendable, Hashable, CustomStringConvertible {
    public var line: Int?
    public var key: String
    public var message: String

    public init(line: Int?, key: String, message: String) {
        self.line = line
        self.key = key
        self.message = message
    }

    public var description: String {
        (line.map { "line \($0): " } ?? "") + (key.isEmpty ? "" : "\(key): ") + message
    }
}

/// A configuration file that cannot be used, with every problem found in it.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public var path: String
    public var problems: [ConfigurationProblem]

    public init(path: String, problems: [ConfigurationProblem]) {
        self.path = path
        self.problems = problems
    }

    public var description: String {
        let head = problems.count == 1 ? "1 problem" : "\(problems.count) problems"
        return "The configuration '\(path)' has \(head):\n" + problems.map { "  \(path):\($0)" }.joined(separator: "\n")
    }
}
