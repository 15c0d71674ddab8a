/// The options and arguments given to one command, checked against its
/// ``CommandSpec``: `--name value`, `--name=value`, flags, `--` before
/// arguments that start with a dash.
struct ParsedArguments: Sendable {
    private(set) var values: [String: [String]] = [:]
    private(set) var flags: Set<String> = []
    private(set) var arguments: [String] = []
    let spec: CommandSpec

    /// Parses `words` (what follows the command's name) for `spec`.
    /// `--help`, `-h` and `--version` are handled before (see ``CommandRunner``).
    init(_ words: [String], for spec: CommandSpec) throws(UsageError) {
        self.spec = spec
        var i = 0
        var onlyArguments = false
        while i < words.count {
            let word = words[i]
            i += 1
            if onlyArguments || !word.hasPrefix("-") || word == "-" {
                guard arguments.count < spec.arguments.count else { throw UsageError("Unexpected argument '\(word)'") }
                arguments.append(word)
                continue
            }
            if word == "--" {
                onlyArguments = true
                continue
            }
            var name = word.hasPrefix("--") ? String(word.dropFirst(2)) : ""
            var attached: String?
            if let eq = name.firstIndex(of: "=") {
                attached = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard let option = spec.options.first(where: { $0.name == name }), !name.isEmpty else {
                throw UsageError("Unknown option '\(word)'")
            }
            if option.isFlag {
                if let attached { throw UsageError("The option '--\(name)' does not take any value, but '\(attached)' was specified.") }
                flags.insert(name)
                continue
            }
            let value: String
            if let attached {
                // `--state-directory=$UNSET` must not mean "/".
                guard !attached.isEmpty else { throw UsageError("Missing value for '\(option.synopsis)'", option: option) }
                value = attached
            } else {
                guard i < words.count, !words[i].hasPrefix("--") else {
                    throw UsageError("Missing value for '\(option.synopsis)'", option: option)
                }
                value = words[i]
                i += 1
            }
            // A single-valued option given again: the last one wins (as in
            // swift-argument-parser), so wrappers can pass defaults before "$@".
            if option.isRepeatable { values[name, default: []].append(value) } else { values[name] = [value] }
        }
        for option in spec.options where option.isRequired && values[option.name] == nil {
            throw UsageError("Missing expected argument '\(option.synopsis)'", option: option)
        }
        if arguments.count < spec.arguments.count {
            throw UsageError("Missing expected argument '<\(spec.arguments[arguments.count].valueName)>'")
        }
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The option's value, or nil when not given.
    func string(_ name: String) -> String? { values[name]?.last }

    /// A required option's value (the parser has checked it is there).
    func required(_ name: String) -> String { values[name]?.last ?? "" }

    /// The positional argument at `index` (the parser has checked it is there).
    func argument(_ index: Int) -> String { arguments[index] }

    /// The option's whole-number value, or `defaultValue` when not given.
    func integer(_ name: String, default defaultValue: Int64) throws(UsageError) -> Int64 {
        guard let text = string(name) else { return defaultValue }
        return try parseInteger(text, name)
    }

    /// Every value of a repeatable option, as whole numbers.
    func integers(_ name: String) throws(UsageError) -> [Int64] {
        var out: [Int64] = []
        for text in values[name] ?? [] { out.append(try parseInteger(text, name)) }
        return out
    }

    private func parseInteger(_ text: String, _ name: String) throws(UsageError) -> Int64 {
        let option = spec.options.first { $0.name == name }
        guard let n = Int64(text) else {
            throw UsageError("The value '\(text)' is invalid for '\(option?.synopsis ?? "--" + name)': give a whole number.", option: option)
        }
        return n
    }
}
