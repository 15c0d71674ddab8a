/// One thing wrong in a configuration file: where, which key, what.
package struct ConfigurationProblem: Sendable, Hashable, CustomStringConvertible {
    package var line: Int?
    package var key: String
    package var message: String

    package init(line: Int?, key: String, message: String) {
        self.line = line
        self.key = key
        self.message = message
    }

    package var description: String {
        (line.map { "line \($0): " } ?? "") + (key.isEmpty ? "" : "\(key): ") + message
    }
}

/// A configuration file that cannot be used, with every problem found in it.
package struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    package var path: String
    package var problems: [ConfigurationProblem]

    package init(path: String, problems: [ConfigurationProblem]) {
        self.path = path
        self.problems = problems
    }

    package var description: String {
        let head = problems.count == 1 ? "1 problem" : "\(problems.count) problems"
        return "The configuration '\(path)' has \(head):\n" + problems.map { "  \(path):\($0)" }.joined(separator: "\n")
    }
}
