import EdgeIngestCore
import IngestAgent

struct CheckConfigCommand: IngestdCommand {
    static let spec = CommandSpec(
        name: "check-config",
        abstract: "Check a configuration file and report every problem with its line and key.",
        discussion: "Exits 0 when the file is valid, 78 when it has problems (all listed on stderr).",
        options: ConfigurationOptions.specs,
        command: CheckConfigCommand.self
    )

    let options: ConfigurationOptions

    init(_ arguments: ParsedArguments) {
        options = ConfigurationOptions(arguments)
    }

    func run() throws {
        let environment = processEnvironment()
        let path = options.resolvedPath(environment: environment)
        do {
            let configuration = try options.load(environment: environment)
            print("\(path): OK")
            print("  record types: " + configuration.types.map(\.description).joined(separator: ", "))
            print(
                "  inputs: "
                    + configuration.inputs.map { input in
                        let broker = input.mqtt.map {
                            ", broker \($0.url), client id \($0.clientID), session \($0.sessionExpirySeconds) s, MQTT \($0.version5 ? "5" : "3.1.1"), password \($0.password == nil ? "none" : "set")"
                        }
                        return
                            "\(input.name) (\(input.format.rawValue), type \(input.type ?? "from _type")\(broker ?? ""))"
                    }
                    .joined(separator: ", ")
            )
            print(
                "  queue: \(configuration.resolvedQueuePath), overflow \(configuration.queue.overflowPolicy), durability \(configuration.queue.durability)"
            )
            print("  upload: \(configuration.uploadSummary)")
            print(
                "  memory: a limit (systemd's MemoryMax=) of at least \(MemoryLimit.floor(for: configuration) >> 20) MiB; under less, the agent refuses to start"
            )
            // A configuration meant for the service (under /etc, or read by
            // systemd's unit) with a stdin input: stdin is /dev/null there.
            let forTheService = path.hasPrefix("/etc/") || environment["CONFIGURATION_DIRECTORY"] != nil
            if forTheService, let stdin = configuration.inputs.first(where: { $0.kind == .stdin }) {
                printError(
                    "warning: input '\(stdin.name)' reads stdin, which is /dev/null when ingestd runs as a service: it would end at once. Use kind = \"socket\" (sensor.py | ingestd send) or a file input."
                )
            }
            for warning in TLSFileCheck.warnings(in: configuration) { printError("warning: \(warning)") }
            let tlsProblems = TLSFileCheck.problems(in: configuration)
            if !tlsProblems.isEmpty {
                printError(
                    "The TLS files of '\(path)' have \(tlsProblems.count == 1 ? "1 problem" : "\(tlsProblems.count) problems"):\n"
                        + tlsProblems.map { "  \($0)" }.joined(separator: "\n")
                )
                throw ExitCodes.configError
            }
            if !configuration.uploadHolds.isEmpty {
                printError(
                    "\(ConfigurationError(path: path, problems: configuration.uploadHolds))\n"
                        + "(ingestd run still starts with these and collects readings into its queue, but holds uploads until they are fixed.)"
                )
                throw ExitCodes.configError
            }
        } catch let error as ExitCode {
            throw error
        } catch {
            printError("\(error)")
            throw ExitCodes.configError
        }
    }
}
