/// `--help` texts in swift-argument-parser's layout (OVERVIEW, the
/// discussion, USAGE, ARGUMENTS, OPTIONS, SUBCOMMANDS), which
/// scripts/help-to-man.sh turns into the man page.
enum HelpText {
    /// Lines stay under 80 columns (as swift-argument-parser wraps them).
    static let width = 79
    /// Where option help starts: two spaces, the synopsis padded to 24.
    static let column = 26

    /// The full help of the command at `path` (e.g. ["ingestd", "dead-letter", "list"]).
    static func full(_ spec: CommandSpec, path: [String]) -> String {
        var out: [String] = []
        out.append(wrap("OVERVIEW: " + spec.abstract))
        out.append("")
        if !spec.discussion.isEmpty {
            for paragraph in spec.discussion.split(separator: "\n", omittingEmptySubsequences: false) {
                out.append(paragraph.hasPrefix("  ") || paragraph.isEmpty ? String(paragraph) : wrap(String(paragraph)))
            }
            out.append("")
        }
        out.append("USAGE: " + usage(spec, path: path))
        out.append("")
        if !spec.arguments.isEmpty {
            out.append("ARGUMENTS:")
            for argument in spec.arguments { out.append(entry("<\(argument.valueName)>", argument.help)) }
            out.append("")
        }
        out.append("OPTIONS:")
        for option in spec.options {
            let text = option.help + (option.defaultValue.map { " (default: \($0))" } ?? "")
            out.append(entry(option.synopsis, text))
        }
        out.append(entry("--version", "Show the version."))
        out.append(entry("-h, --help", "Show help information."))
        out.append("")
        if !spec.subcommands.isEmpty {
            out.append("SUBCOMMANDS:")
            for sub in spec.subcommands { out.append(entry(sub.name, sub.abstract)) }
            out.append("")
            let prefix = path.dropFirst().map { $0 + " " }.joined()
            out.append("  See '\(path[0]) help \(prefix)<subcommand>' for detailed help.")
        }
        return out.joined(separator: "\n")
    }

    /// `ingestd export [--config <file>] … --out <file> [--move]`.
    static func usage(_ spec: CommandSpec, path: [String]) -> String {
        var parts = [path.joined(separator: " ")]
        if !spec.subcommands.isEmpty && spec.command == nil {
            parts.append("<subcommand>")
        }
        for option in spec.options {
            let text = option.synopsis + (option.isRepeatable ? " ..." : "")
            parts.append(option.isRequired ? text : "[\(text)]")
        }
        for argument in spec.arguments { parts.append("<\(argument.valueName)>") }
        return parts.joined(separator: " ")
    }

    /// What a usage error prints after "Error: …".
    static func errorHelp(_ error: UsageError, _ spec: CommandSpec, path: [String]) -> String {
        var out = ""
        if let option = error.option { out += "Help:  \(option.synopsis)  \(option.help)\n" }
        out += "Usage: " + usage(spec, path: path) + "\n"
        out += "  See '\(path.joined(separator: " ")) --help' for more information."
        return out
    }

    /// `  --out <file>            The file to create…`, the help wrapped
    /// under its column; a synopsis too long for it gets a line of its own.
    private static func entry(_ synopsis: String, _ help: String) -> String {
        let lines = wrapLines(help, width: width - column)
        let padding = String(repeating: " ", count: column)
        var out: [String] = []
        let head = "  " + synopsis
        if head.count < column {
            out.append(head + String(repeating: " ", count: column - head.count) + (lines.first ?? ""))
            out += lines.dropFirst().map { padding + $0 }
        } else {
            out.append(head)
            out += lines.map { padding + $0 }
        }
        return out.joined(separator: "\n")
    }

    static func wrap(_ text: String) -> String { wrapLines(text, width: width).joined(separator: "\n") }

    /// Words filled into lines of at most `width` characters (a longer
    /// word gets a line of its own).
    static func wrapLines(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if line.isEmpty {
                line = String(word)
            } else if line.count + 1 + word.count <= width {
                line += " " + word
            } else {
                lines.append(line)
                line = String(word)
            }
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }
}
