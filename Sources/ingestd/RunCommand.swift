import EdgeIngestCore
import IngestAgent
import Logging

struct RunCommand: IngestdCommand {
    static let spec = CommandSpec(
        name: "run",
        abstract: "Run the agent: read inputs, validate, and queue readings durably.",
        discussion: """
            With a stdin input (the default), pipe readings in: `sensor.py | ingestd run`. \
            At end of input everything read is committed and ingestd exits 0; what is \
            queued stays for the next start. SIGTERM or SIGINT stops the inputs, commits \
            what they read, and exits 0.

            Under systemd (Type=notify) ingestd sends READY=1 once the queue is open and \
            the inputs run, keeps STATUS= current, pings the watchdog while the pipeline \
            makes progress, and logs to the journal with INGEST_* fields.
            """,
        options: ConfigurationOptions.specs + [
            queuePathOption.spec, logTargetOption.spec, formatOption.spec, typeOption.spec,
        ],
        command: RunCommand.self
    )
    static let queuePathOption = Option<String>("queue-path", "file", help: "Overrides queue.path.")
    static let logTargetOption = Option<String>(
        "log-target",
        "target",
        help: "Where logs go: auto (the journal when stderr is the journal), journal or stderr."
    )
    static let formatOption = Option<String>("format", "format", help: "The stdin input's format: ndjson or csv.")
    static let typeOption = Option<String>(
        "type",
        "type",
        help: "The stdin input's record type (when readings carry no _type)."
    )

    let options: ConfigurationOptions
    let queuePath: String?
    let logTarget: String?
    let format: String?
    let type: String?

    init(_ arguments: ParsedArguments) throws(UsageError) {
        options = ConfigurationOptions(arguments)
        queuePath = arguments[Self.queuePathOption]
        logTarget = arguments[Self.logTargetOption]
        format = arguments[Self.formatOption]
        type = arguments[Self.typeOption]
        if let logTarget, AgentConfiguration.LogTarget(rawValue: logTarget) == nil {
            throw UsageError("--log-target must be auto, journal or stderr, got '\(logTarget)'.")
        }
        if let format, InputSettings.Format(rawValue: format) == nil {
            throw UsageError("--format must be ndjson or csv, got '\(format)'.")
        }
    }

    func run() async throws {
        let environment = processEnvironment()
        var configuration: AgentConfiguration
        do {
            configuration = try options.load(environment: environment)
        } catch {
            printError("\(error)")
            throw ExitCodes.forError(error)
        }
        if let queuePath { configuration.queuePath = queuePath }
        if let logTarget { configuration.logTarget = AgentConfiguration.LogTarget(rawValue: logTarget)! }
        for i in configuration.inputs.indices where configuration.inputs[i].kind == .stdin {
            if let format { configuration.inputs[i].format = InputSettings.Format(rawValue: format)! }
            if let type {
                guard configuration.types.contains(where: { $0.name == type }) else {
                    printError(
                        "--type '\(type)' names no declared record type (declared: \(configuration.types.map(\.name).joined(separator: ", ")))."
                    )
                    throw ExitCodes.configError
                }
                configuration.inputs[i].type = type
            }
        }
        let logger = bootstrapLogging(configuration, environment: environment)
        do {
            try await Agent(configuration: configuration, logger: logger).run()
        } catch {
            logger.critical("ingestd stopped on an error", metadata: ["error": "\(error)"])
            if configuration.logTarget != .stderr { printError("ingestd: \(error)") }
            throw ExitCodes.forError(error)
        }
    }

    private func bootstrapLogging(_ configuration: AgentConfiguration, environment: [String: String]) -> Logger {
        let level = Logger.Level(rawValue: configuration.logLevel) ?? .info
        let useJournal: Bool
        switch configuration.logTarget {
        case .journal: useJournal = true
        case .stderr: useJournal = false
        case .auto: useJournal = stderrIsJournal(environment: environment)
        }
        LoggingSystem.bootstrap { label in
            var handler: any LogHandler =
                useJournal
                ? JournalLogHandler(label: label, identifier: "ingestd") : StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "ingestd")
    }
}
