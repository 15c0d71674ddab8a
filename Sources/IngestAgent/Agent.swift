import EdgeIngestCore
import Logging
import ServiceLifecycle
import UnixSignals

/// The running agent: opens the queue, starts the inputs and the status
/// service, and shuts everything down in reverse order on SIGTERM/SIGINT.
///
/// ```swift
/// let configuration = try AgentConfiguration.load(path: "/etc/ingestd/ingestd.toml", environment: env)
/// try await Agent(configuration: configuration, logger: logger).run()
/// ```
package struct Agent: Sendable {
    package let configuration: AgentConfiguration
    package let logger: Logger

    package init(configuration: AgentConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Runs until every input has finished (stdin at end of input), a
    /// termination signal arrives, or `reload` reads a new configuration
    /// (then it returns ``AgentExit/reload(_:)`` for the caller to run
    /// again). Everything read is committed before it returns.
    @discardableResult
    package func run(reload: Reload? = nil) async throws -> AgentExit {
        if !configuration.uploadHolds.isEmpty {
            // Accepted by an earlier release: collect anyway, hold the upload
            // (the sink refuses to send such records and says why in status).
            logger.error(
                "The configuration has problems that hold uploads; readings are collected and queued until they are fixed (ingestd check-config lists them)",
                metadata: ["ingest.problems": "\(configuration.uploadHolds.map(\.description).joined(separator: "; "))"]
            )
        }
        // Before the queue opens: its appends read the clock's state.
        ClockSynchronisation.use(configuration.clockSource)
        // The status file lives here even when the queue is elsewhere.
        try QueueFile.makeDirectories(configuration.stateDirectory)
        let queue = try QueueOpening.open(configuration, logger: logger)
        defer { queue.close() }
        let rejects = try configuration.rejectsFile.map { try RejectsFile(path: $0) }
        let firstStart = try queue.statistics().appendedTotal == 0 && queue.positions().isEmpty
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        var counters: [InputCounters] = []
        let onlyFinite = configuration.inputs.allSatisfy { $0.kind == .stdin }
        let finiteInputs = FiniteInputs()
        let notifier = SystemdNotifier()
        let idleHeartbeat = InputContext.idleHeartbeat(watchdogMicroseconds: notifier.watchdogMicroseconds)
        let sinks = configuration.deliveringSinks
        let uploadStates = sinks.map { (name: $0.name, state: UploadState()) }
        let uploadState = uploadStates.first?.state ?? UploadState()
        // A commit wakes every sink's uploader.
        let others = sinks.dropFirst().map { _ in WakeSignal() }
        let committed = WakeSignal(alsoWaking: others)
        // Order matters: on shutdown the group stops services in reverse, so
        // the status service stops first (STOPPING=1), then the inputs commit
        // what they read, and the uploader, stopped last, drains the queue
        // for a bounded time.
        // One uploader per sink, each at its own cursor in the queue: a sink
        // that is down or slow holds back only itself.
        let wakes = [committed] + others
        for (index, sink) in sinks.enumerated() {
            let hooks = AgentUploadHooks(configuration: configuration, queue: queue, logger: logger)
            let userAgent = "ingestd/\(EdgeIngestVersion.current)"
            var sinkLogger = logger
            if sinks.count > 1 { sinkLogger[metadataKey: "ingest.sink_name"] = "\(sink.name)" }
            let uploader = Uploader(
                queue: queue,
                settings: sink.upload,
                state: uploadStates[index].state,
                // [auth] and client resets belong to [upload]'s backend.
                hooks: index == 0 && configuration.upload != nil
                    ? try hooks.make(app: try hooks.makeApp()) : UploadHooks(),
                userAgent: userAgent,
                logger: sinkLogger,
                sink: configuration.heldUploads.isEmpty
                    ? sink.sink.configuration.makeSink(configuration, upload: sink.upload, userAgent: userAgent)
                    : { [held = configuration.heldUploads] in
                        HeldSink(
                            reason: "the configuration holds uploads: "
                                + held.map(\.description).joined(separator: "; ")
                                + " (ingestd check-config)"
                        )
                    },
                sinkName: sink.name
            )
            services.append(.init(service: UploadService(uploader: uploader, wake: wakes[index])))
        }
        for settings in configuration.inputs {
            let inputCounters = InputCounters(name: settings.name, kind: settings.kind.rawValue)
            counters.append(inputCounters)
            let context = InputContext(
                settings: settings,
                types: configuration.types,
                queue: queue,
                counters: inputCounters,
                rejects: rejects,
                rejectionLog: RejectionLog(input: settings.name, logger: logger),
                commitMaxRecords: configuration.commitMaxRecords,
                commitIntervalMilliseconds: configuration.commitIntervalMilliseconds,
                logger: logger,
                committed: sinks.isEmpty ? nil : committed,
                idleHeartbeatMilliseconds: idleHeartbeat
            )
            let service: any Service
            switch settings.kind {
            case .stdin: service = StdinInput(context: context)
            case .file: service = FileInput(context: context, firstStart: firstStart)
            case .serial: service = SerialInput(context: context)
            case .mqtt: service = MQTTInput(context: context)
            case .http: service = try HTTPInput(context: context, stateDirectory: configuration.stateDirectory)
            case .socket:
                service = try SocketInput(
                    context: context,
                    path: configuration.socketPath(of: settings),
                    reload: reload
                )
            }
            // Only stdin ends by itself; with nothing but stdin inputs, the
            // agent ends after the last of them (FiniteInputs says why it
            // is not simply .gracefullyShutdownGroup).
            services.append(
                .init(
                    service: onlyFinite ? finiteInputs.wrap(service) : service,
                    successTerminationBehavior: .ignore,
                    failureTerminationBehavior: .gracefullyShutdownGroup
                )
            )
        }
        let status = StatusService(
            queue: queue,
            inputs: counters,
            upload: sinks.isEmpty ? nil : uploadState,
            sinks: uploadStates,
            statusPath: configuration.statusPath,
            notifier: notifier,
            statusIntervalMilliseconds: configuration.statusIntervalMilliseconds,
            statsIntervalSeconds: configuration.statsIntervalSeconds,
            logger: logger,
            reload: reload,
            unhealthyAfter: (configuration.unhealthyAfterSeconds, configuration.unhealthyAfterKey)
        )
        services.append(.init(service: status))
        // Last to start, first to stop: scrapes see a running agent.
        if let metrics = configuration.metrics {
            let idle = Int32(InputContext.idleHeartbeat(watchdogMicroseconds: notifier.watchdogMicroseconds))
            services.append(
                .init(
                    service: try MetricsService(
                        settings: metrics,
                        status: status,
                        idleMilliseconds: idle,
                        logger: logger
                    )
                )
            )
        }
        // First to stop: no reload starts once the agent is stopping.
        let shutDown = GroupShutdown()
        if let reload {
            services.append(
                .init(
                    service: ReloadService(reload: reload, notifier: notifier, logger: logger) {
                        await shutDown.trigger()
                    }
                )
            )
        }
        var groupConfiguration = ServiceGroupConfiguration(services: services, logger: logger)
        groupConfiguration.gracefulShutdownSignals = [.sigterm, .sigint]
        let group = ServiceGroup(configuration: groupConfiguration)
        finiteInputs.attach(group)
        shutDown.attach(group)
        defer { if reload?.acceptedConfiguration == nil { status.writeFinalStatus() } }
        try await group.run()
        if let next = reload?.acceptedConfiguration {
            logger.notice("Restarting the services with the new configuration")
            return .reload(next)
        }
        if onlyFinite, finiteInputs.allEnded, !sinks.isEmpty,
            let left = uploadStates.lazy.compactMap({ $0.state.snapshot.leftAtStop }).first
        {
            return .endedWithReadingsQueued(records: left.records, reason: left.reason)
        }
        return .stopped
    }
}
