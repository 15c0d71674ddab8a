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
                if let attached {
                    throw UsageError("The option '--\(name)' does not take any value, but '\(attached)' was specified.")
                }
                flags.insert(name)
                continue
            }
            let value: String
            if let attached {
                // `--state-directory=$UNSET` must not mean "/".
                guard !attached.isEmpty else {
                    throw UsageError("Missing value for '\(option.synopsis)'", option: option)
                }
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

    /// Whether the flag was given.
    subscript(flag: Flag) -> Bool {
        assertDeclared(flag.spec)
        return flags.contains(flag.spec.name)
    }

    /// A string option's value (the last one given), or nil.
    subscript(option: Option<String>) -> String? {
        assertDeclared(option.spec)
        return values[option.spec.name]?.last
    }

    /// A required string option's value (the parser has checked it is there).
    func required(_ option: Option<String>) -> String {
        assertDeclared(option.spec)
        precondition(option.spec.isRequired, "--\(option.spec.name) is not declared required")
        return values[option.spec.name]?.last ?? ""
    }

    /// The option's value (the last one given), converted; its default, or
    /// nil, when not given.
    func value<Value>(_ option: Option<Value>) throws(UsageError) -> Value? {
        assertDeclared(option.spec)
        guard let text = values[option.spec.name]?.last else { return option.defaultValue }
        return try option.convert(text, option.spec)
    }

    /// Every value of a repeatable option, converted, in the order given.
    func values<Value>(_ option: Option<Value>) throws(UsageError) -> [Value] {
        assertDeclared(option.spec)
        var out: [Value] = []
        for text in values[option.spec.name] ?? [] { out.append(try option.convert(text, option.spec)) }
        return out
    }

    /// The positional argument (the parser has checked it is there).
    subscript(argument: Argument) -> String { arguments[argument.index] }

    /// Reading a key the command did not declare is a programming error.
    private func assertDeclared(_ option: OptionSpec) {
        assert(spec.options.contains { $0.name == option.name }, "--\(option.name) is not an option of '\(spec.name)'")
    }
}
