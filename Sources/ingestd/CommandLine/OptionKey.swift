import IngestAgent

/// Options and arguments declared once, as typed keys: the declaration gives
/// the parser and `--help` their ``OptionSpec``, and the command reads its
/// value through the same key, so a misspelled name does not compile and a
/// value is read as the type it was declared with.
///
/// ```swift
/// static let json = Flag("json", help: "Print the status as JSON.")
/// static let limit = Option.integer("limit", "limit", help: "Show at most this many.", default: 50)
/// static let spec = CommandSpec(name: "list", abstract: "…", options: [json.spec, limit.spec])
/// …
/// let asJSON = arguments[Self.json]
/// let count = try arguments.value(Self.limit)   // Int64, 50 when not given
/// ```
struct Flag: Sendable {
    let spec: OptionSpec

    init(_ name: String, help: String) { spec = .flag(name, help: help) }
}

/// An option that takes a value, converted to `Value` when read.
struct Option<Value: Sendable>: Sendable {
    let spec: OptionSpec
    /// Used when the option is not given (shown in help as `(default: …)`).
    let defaultValue: Value?
    let convert: @Sendable (_ text: String, _ spec: OptionSpec) throws(UsageError) -> Value
}

extension Option where Value == String {
    /// `--name <valueName>`, taken as written.
    init(_ name: String, _ valueName: String, help: String, required: Bool = false, repeatable: Bool = false) {
        spec = .value(name, valueName, help: help, required: required, repeatable: repeatable)
        defaultValue = nil
        convert = { text, _ throws(UsageError) in text }
    }
}

extension Option where Value == Int64 {
    /// `--name <valueName>`, a whole number (within `range`, when given).
    static func integer(
        _ name: String,
        _ valueName: String,
        help: String,
        repeatable: Bool = false,
        default defaultValue: Int64? = nil,
        in range: ClosedRange<Int64>? = nil
    ) -> Option {
        Option(
            spec: .value(name, valueName, help: help, repeatable: repeatable, default: defaultValue.map { String($0) }),
            defaultValue: defaultValue
        ) { text, spec throws(UsageError) in
            guard let number = Int64(text) else {
                throw UsageError(
                    "The value '\(text)' is invalid for '\(spec.synopsis)': give a whole number.",
                    option: spec
                )
            }
            if let range, !range.contains(number) {
                throw UsageError(
                    "--\(spec.name) must be from \(range.lowerBound) to \(range.upperBound), got \(number).",
                    option: spec
                )
            }
            return number
        }
    }
}

extension Option where Value == Int64 {
    /// `--name <valueName>`, a duration (`90s`, `30m`, `12h`, `7d`) in milliseconds.
    static func duration(_ name: String, help: String, default defaultText: String) -> Option {
        Option(
            spec: .value(name, "duration", help: help, default: defaultText),
            defaultValue: parseDurationMilliseconds(defaultText)
        ) { text, spec throws(UsageError) in
            guard let milliseconds = parseDurationMilliseconds(text) else {
                throw UsageError(
                    "--\(spec.name) takes a number with s, m, h or d (90s, 30m, 12h, 7d), got '\(text)'.",
                    option: spec
                )
            }
            return milliseconds
        }
    }
}

/// "90s", "30m", "12h", "7d" in milliseconds; nil for anything else.
func parseDurationMilliseconds(_ text: String) -> Int64? {
    guard let unit = text.last, let n = Int64(text.dropLast()), n >= 0 else { return nil }
    let scale: Int64
    switch unit {
    case "s": scale = 1_000
    case "m": scale = 60_000
    case "h": scale = 3_600_000
    case "d": scale = 86_400_000
    default: return nil
    }
    let (product, overflow) = n.multipliedReportingOverflow(by: scale)
    return overflow ? nil : product
}

extension Option where Value == InputSettings.Format {
    /// `--format <format>`: ndjson or csv (`run`'s stdin input, `send`'s stream).
    static func format(help: String) -> Option {
        Option(spec: .value("format", "format", help: help), defaultValue: nil) { text, spec throws(UsageError) in
            guard let format = InputSettings.Format(rawValue: text) else {
                throw UsageError("--format must be ndjson or csv, got '\(text)'.", option: spec)
            }
            return format
        }
    }
}

/// A required positional argument; `index` is its place among the command's arguments.
struct Argument: Sendable {
    let spec: ArgumentSpec
    let index: Int

    init(_ valueName: String, help: String, index: Int = 0) {
        spec = ArgumentSpec(valueName: valueName, help: help)
        self.index = index
    }
}
