import EdgeIngestCore
import IngestAgent
import Logging

#if canImport(Glibc)
import Glibc
#endif

struct RunCommand: IngestdCommand {
    static let spec = CommandSpec(
        name: "run",
        abstract: "Run the agent: read inputs, validate, and queue readings durably.",
        discussion: """
            With a stdin input (the default), pipe readings in: `sensor.py | ingestd run`. \
            At end of input everything read is committed, the uploader (if any) sends \
            what it can within upload.shutdown_timeout_ms, and ingestd exits 0 — or 75 \
            when readings are left queued because the upload could not finish (the \
            backend refused or held them, or the time ran out: the log says which); they \
            stay in the queue for the next start. SIGTERM or SIGINT stops the inputs, \
            commits what they read, and exits 0.

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
    static let formatOption = Option.format(help: "The stdin input's format: ndjson or csv.")
    static let typeOption = Option<String>(
        "type",
        "type",
        help: "The stdin input's record type (when readings carry no _type)."
    )

    let options: ConfigurationOptions
    let queuePath: String?
    let logTarget: String?
    let format: InputSettings.Format?
    let type: String?

    init(_ arguments: ParsedArguments) throws(UsageError) {
        options = ConfigurationOptions(arguments)
        queuePath = arguments[Self.queuePathOption]
        logTarget = arguments[Self.logTargetOption]
        format = try arguments.value(Self.formatOption)
        type = arguments[Self.typeOption]
        if let logTarget, AgentConfiguration.LogTarget(rawValue: logTarget) == nil {
            throw UsageError("--log-target must be auto, journal or stderr, got '\(logTarget)'.")
        }
    }

    func run() async throws {
        // A peer gone mid-write is an error to handle, not the end of the
        // agent: OpenSSL writes to its socket without MSG_NOSIGNAL (the MQTT
        // input's TLS), and a daemon has no terminal pipe to stop for.
        signal(SIGPIPE, SIG_IGN)
        let environment = processEnvironment()
        // Read once: the unit's limit does not change while it runs.
        let memoryLimit = MemoryLimit.ofThisProcess()
        var configuration: AgentConfiguration
        do {
            configuration = try configured(environment: environment, memoryLimit: memoryLimit)
        } catch {
            printError("\(error)")
            throw ExitCodes.forError(error)
        }
        let logger = bootstrapLogging(configuration, environment: environment)
        // Why the agent stops goes to stderr too, for whoever started it,
        // when the log went to the journal and stderr is not the journal
        // (a unit's stderr is: the same line twice in `journalctl -u`).
        // Under "auto" the log is on stderr or stderr is the journal.
        let copiesToStderr = configuration.logTarget == .journal && !stderrIsJournal(environment: environment)
        // A limit too small would end in a kill loop: refuse it once, clearly (exit 78: not restarted).
        if let limit = memoryLimit, let refusal = limit.refusal(for: configuration) {
            logger.critical("\(refusal)")
            if copiesToStderr { printError("ingestd: \(refusal)") }
            throw ExitCodes.configError
        }
        if let limit = memoryLimit, configuration.inputs.contains(where: { $0.kind == .http || $0.kind == .mqtt }),
            limit.receivedIDsCacheBytes < QueueSettings().receivedIDsCacheBytes
        {
            let cache = Int64(limit.receivedIDsCacheBytes)
            logger.info(
                "Under the memory limit of \(MemoryLimit.mebibytes(limit.bytes)) the received-id cache is \(MemoryLimit.mebibytes(cache)) (16 MiB without a limit)",
                metadata: [
                    "memory.cgroup": "\(limit.cgroup)", "memory.limit_bytes": "\(limit.bytes)",
                    "queue.received_id_cache_bytes": "\(cache)",
                ]
            )
        }
        // SIGHUP asks for a reload (ExecReload= in the unit), for the life of
        // the process: a burst coalesces into one request, and one that comes
        // while the agent restarts is answered after (never lost, never a kill).
        let (requests, forward) = await Reload.hangupRequests()
        // Senders' connections cross reloads: one hand-over for every run.
        let handover = SocketHandover()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await forward() }
            defer { group.cancelAll() }
            while true {
                let reload = Reload(requests: requests, handover: handover) {
                    try configured(environment: environment, memoryLimit: memoryLimit)
                }
                let exit: AgentExit
                do {
                    exit = try await Agent(configuration: configuration, logger: logger).run(reload: reload)
                } catch {
                    logger.critical("ingestd stopped on an error: \(error)")
                    if copiesToStderr { printError("ingestd: \(error)") }
                    throw ExitCodes.forError(error)
                }
                if case .endedWithReadingsQueued(let records, let reason) = exit {
                    // Logged by the uploader already; a pipe's caller learns it from the code.
                    if copiesToStderr {
                        printError("ingestd: \(records) readings stay queued (\(reason)); run again to upload them.")
                    }
                    throw ExitCodes.tempFail
                }
                guard case .reload(let next) = exit else { return }
                if next.logLevel != configuration.logLevel || next.logTarget != configuration.logTarget {
                    logger.warning("agent.log_level and agent.log_target change only with a restart, not a reload")
                }
                configuration = next
            }
        }
    }

    /// The configuration file with this command's options applied (also
    /// what a reload reads).
    private func configured(environment: [String: String], memoryLimit: MemoryLimit?) throws -> AgentConfiguration {
        var configuration = try options.load(environment: environment)
        if let memoryLimit { configuration.queue.receivedIDsCacheBytes = memoryLimit.receivedIDsCacheBytes }
        if let queuePath { configuration.queuePath = queuePath }
        if let logTarget { configuration.logTarget = AgentConfiguration.LogTarget(rawValue: logTarget)! }
        for i in configuration.inputs.indices where configuration.inputs[i].kind == .stdin {
            if let format { configuration.inputs[i].format = format }
            if let type {
                guard configuration.types.contains(where: { $0.name == type }) else {
                    throw ConfigurationError(
                        path: options.resolvedPath(environment: environment),
                        problems: [
                            ConfigurationProblem(
                                line: nil,
                                key: "--type",
                                message:
                                    "'\(type)' names no declared record type (declared: \(configuration.types.map(\.name).joined(separator: ", ")))"
                            )
                        ]
                    )
                }
                configuration.inputs[i].type = type
            }
        }
        return configuration
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
