import EdgeIngestCore

/// Finds the subcommand the words name, handles `--help`, `-h`, `help …`
/// and `--version`, parses the rest, runs the command, and turns the
/// outcome into an exit status: 0, a thrown ``ExitCode``, 64 for a
/// ``UsageError`` (printed with the usage), else the code
/// ``ExitCodes/forError(_:)`` gives.
struct CommandRunner {
    let root: CommandSpec
    let version: String

    func run(_ words: [String]) async -> Int32 {
        var spec = root
        var path = [root.name]
        var rest = words[...]
        // `ingestd help dead-letter list` is `ingestd dead-letter list --help`.
        let wantsHelp = rest.first == "help"
        if wantsHelp { rest = rest.dropFirst() }
        while let word = rest.first, let sub = spec.subcommands.first(where: { $0.name == word }) {
            spec = sub
            path.append(word)
            rest = rest.dropFirst()
        }
        let remaining = Array(rest)
        let beforeSeparator = remaining.prefix { $0 != "--" }
        if wantsHelp || beforeSeparator.contains("--help") || beforeSeparator.contains("-h") {
            print(HelpText.full(spec, path: path))
            return 0
        }
        if beforeSeparator.contains("--version") {
            print(version)
            return 0
        }
        guard let command = spec.command else {
            if let word = remaining.first {
                return usageError(
                    UsageError(word.hasPrefix("-") ? "Unknown option '\(word)'" : "Unexpected argument '\(word)'"),
                    spec,
                    path
                )
            }
            print(HelpText.full(spec, path: path))
            return 0
        }
        let instance: any IngestdCommand
        do throws(UsageError) {
            instance = try command.init(ParsedArguments(remaining, for: spec))
        } catch {
            return usageError(error, spec, path)
        }
        do {
            try await instance.run()
            return 0
        } catch let exit as ExitCode {
            return exit.rawValue
        } catch {
            printError("\(path.joined(separator: " ")): \(error)")
            return ExitCodes.forError(error).rawValue
        }
    }

    private func usageError(_ error: UsageError, _ spec: CommandSpec, _ path: [String]) -> Int32 {
        printError("Error: " + error.message)
        printError(HelpText.errorHelp(error, spec, path: path))
        return ExitCodes.usageError.rawValue
    }
}
