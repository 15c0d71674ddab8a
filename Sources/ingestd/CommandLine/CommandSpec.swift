/// What a command accepts and says about itself: the declarations the
/// parser reads and `--help` prints. ingestd's own small take on
/// swift-argument-parser's `CommandConfiguration` and `@Option`/`@Flag`:
/// that package imports FoundationEssentials, which adds megabytes to the
/// binary (docs/BENCHMARKS.md, "Binary size").
///
/// ```swift
/// struct StatusCommand: IngestdCommand {
///     static let spec = CommandSpec(
///         name: "status", abstract: "Show the agent's state and counters.",
///         options: ConfigurationOptions.specs + [jsonFlag.spec]
///     )
///     static let jsonFlag = Flag("json", help: "Print the status as JSON.")   // OptionKey.swift
///     let json: Bool
///     init(_ arguments: ParsedArguments) throws(UsageError) { json = arguments[Self.jsonFlag] }
///     func run() async throws { … }
/// }
/// ```
struct CommandSpec: Sendable {
    var name: String
    var abstract: String
    /// Paragraphs for `--help`, wrapped under 80 columns; a line that starts
    /// with two spaces (an example) is printed as written.
    var discussion: String = ""
    var options: [OptionSpec] = []
    var arguments: [ArgumentSpec] = []
    var subcommands: [CommandSpec] = []
    /// The command to run; nil for a group, which only has subcommands.
    var command: (any IngestdCommand.Type)?
}

/// A `--name` option: a flag, or one that takes a value.
struct OptionSpec: Sendable {
    var name: String
    /// nil for a flag; else the value's name in help (`--out <file>`).
    var valueName: String?
    var help: String
    var isRequired = false
    var isRepeatable = false
    /// Shown as `(default: …)`.
    var defaultValue: String?

    static func flag(_ name: String, help: String) -> OptionSpec {
        OptionSpec(name: name, valueName: nil, help: help)
    }

    static func value(
        _ name: String,
        _ valueName: String,
        help: String,
        required: Bool = false,
        repeatable: Bool = false,
        default: String? = nil
    ) -> OptionSpec {
        OptionSpec(
            name: name,
            valueName: valueName,
            help: help,
            isRequired: required,
            isRepeatable: repeatable,
            defaultValue: `default`
        )
    }

    var isFlag: Bool { valueName == nil }

    /// `--out <file>` or `--move`.
    var synopsis: String { "--" + name + (valueName.map { " <\($0)>" } ?? "") }
}

/// A required positional argument.
struct ArgumentSpec: Sendable {
    var valueName: String
    var help: String
}

/// A runnable command: built from its parsed arguments (which also checks
/// them: throw ``UsageError`` for a bad combination), then run. Throw
/// ``ExitCode`` to end with a documented exit code after printing the
/// reason yourself.
protocol IngestdCommand: Sendable {
    static var spec: CommandSpec { get }
    init(_ arguments: ParsedArguments) throws(UsageError)
    func run() async throws
}

/// A mistake in the command line: printed with the usage, exit code 64.
struct UsageError: Error, Sendable {
    var message: String
    /// The option it is about, whose help is printed with it.
    var option: OptionSpec?

    init(_ message: String, option: OptionSpec? = nil) {
        self.message = message
        self.option = option
    }
}

/// Ends the process with this status (the reason is already printed).
struct ExitCode: Error, Sendable, Equatable {
    var rawValue: Int32
    init(_ rawValue: Int32) { self.rawValue = rawValue }
}
