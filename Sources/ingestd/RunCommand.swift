import ArgumentParser
import EdgeIngestCore
import IngestAgent
import Logging

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the agent: read inputs, validate, and queue readings durably.",
        discussion: """
            With a stdin input (the default), pipe readings in: `sensor.py | ingestd run`. \
            At end of input everything read is committed and ingestd exits 0; what is \
            queued stays for the next start. SIGTERM or SIGINT stops the inputs, commits \
            what they read, and exits 0.

            Under systemd (Type=notify) ingestd sends READY=1 once the queue is open and \
            the inputs run, keeps STATUS= current, pings the watchdog while the pipeline \
            makes progress, and logs to the journal with INGEST_* fields.
            """
    )

    @OptionGroup var options: ConfigurationOptions

    @Option(help: ArgumentHelp("Overrides queue.path.", valueName: "file"))
    var queuePath: String?

    @Option(help: ArgumentHelp("Where logs go: auto (the journal when stderr is the journal), journal or stderr.", valueName: "target"))
    var logTarget: String?

    @Option(help: ArgumentHelp("The stdin input's format: ndjson or csv.", valueName: "format"))
    var format: String?

    @Option(help: ArgumentHelp("The stdin input's record type (when readings carry no _type).", valueName: "type"))
    var type: String?

    func validate() throws {
        if let logTarget, AgentConfiguration.LogTarget(rawValue: logTarget) == nil {
            throw ValidationError("--log-target must be auto, journal or stderr, got '\(logTarget)'.")
        }
        if let format, InputSettings.Format(rawValue: format) == nil {
            throw ValidationError("--format must be ndjson or csv, got '\(format)'.")
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
                    printError("--type '\(type)' names no declared record type (declared: \(configuration.types.map(\.name).joined(separator: ", "))).")
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
                useJournal ? JournalLogHandler(label: label, identifier: "ingestd") : StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        return Logger(label: "ingestd")
    }
}
