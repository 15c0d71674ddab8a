import EdgeIngestCore

/// Everything `ingestd run` needs, with the defaults an operator gets when
/// the configuration file leaves a key out. etc/ingestd.toml documents every
/// key; ``AgentConfiguration/load(path:environment:)`` reads one.
package struct AgentConfiguration: Sendable {
    /// Where the queue and the status file live. The default is
    /// `$STATE_DIRECTORY` (set by systemd's `StateDirectory=`), else
    /// `$XDG_STATE_HOME/ingestd`, else `~/.local/state/ingestd`.
    package var stateDirectory: String
    /// Whether ``stateDirectory`` is the default because the file sets no
    /// `agent.state_directory` (commands that read a running agent's state
    /// then look where the packaged service keeps it, too).
    package var stateDirectoryIsDefault = false
    /// The queue file. The default is `<state_directory>/queue.sqlite`.
    package var queuePath: String?
    /// `[queue]`'s bounds, overflow policy, durability, schema version and
    /// encryption key (`queue.encryption_key_file`; never printed).
    package var queue = QueueSettings()
    /// `[delivery.TYPE]`: acceptance fields and holding, per type name.
    package var acceptanceStamps: [String: AcceptanceStamping] = [:]
    /// `[delivery.TYPE]`: priority, drain order and maximum age, per type name.
    package var typeDelivery: [String: TypeDelivery] = [:]
    /// `[clock]`: where the clock's synchronisation state comes from.
    package var clockSource = ClockSynchronisation.Source.automatic
    /// How records of older schema versions change (`[[migrations]]`).
    package var migrations: [FieldMigration] = []
    /// Readings are committed in batches of at most this many. The default
    /// is 4000, an upload batch's worth (`[upload] max_records`): a burst
    /// end to end costs 0.78 × the CPU at 1.5 × the rate of batches of 1000
    /// (docs/BENCHMARKS.md, issue 43), for ~3 MiB more peak memory.
    package var commitMaxRecords = 4000
    /// …and at least this often while readings arrive. The default is 200 ms.
    package var commitIntervalMilliseconds = 200
    /// The declared record types.
    package var types: [RecordType]
    /// The inputs. The default is one stdin input reading NDJSON.
    package var inputs: [InputSettings]
    /// Rejected lines are appended here as NDJSON with the reason, if set.
    package var rejectsFile: String?
    /// `auto` (journal when stderr is the journal), `journal` or `stderr`.
    package var logTarget: LogTarget = .auto
    /// The lowest level logged. The default is `info`.
    package var logLevel: String = "info"
    /// How often a stats entry with every counter is logged; 0 turns it off. The default is 60 s.
    package var statsIntervalSeconds = 60
    /// How often the status file is rewritten. The default is 1 s.
    package var statusIntervalMilliseconds = 1000
    /// Where readings stream to; nil keeps them queued (no `[upload]` section).
    package var upload: UploadSettings?
    /// Delivery is unhealthy (`ingestd status` exits 1, `/ready` answers
    /// 503) once the oldest queued reading has waited longer than this
    /// (`upload.unhealthy_after_s`; 0: never by age). Held uploads are
    /// unhealthy at once.
    package var unhealthyAfterSeconds: Int64 = 300
    /// The key `unhealthyAfterSeconds` came from, for messages.
    package var unhealthyAfterKey = "upload.unhealthy_after_s"
    /// Where `[upload]` delivers: the ingest protocol (default) or a local archive.
    package var sink: SinkSettings = .ingestProtocol
    /// Which types `[upload]` takes and its lag bound (`types`, `max_lag_bytes`, `max_lag_s`).
    package var uploadRoute = SinkRoute()
    /// The other sinks, `[sinks.NAME]`, in the file's order.
    package var namedSinks: [NamedSink] = []
    /// Log in to the backend (an `[auth]` section) instead of a static token.
    package var auth: AuthSettings?
    /// `/metrics`, `/health` and `/ready` over HTTP (`[metrics]`); nil: not served.
    package var metrics: MetricsSettings?
    /// What a client reset demanded by the backend does.
    package var clientReset = ClientResetSettings()
    /// Problems an earlier release accepted that hold uploads (the agent
    /// still collects); `check-config` refuses them. Empty when all is well.
    package var uploadHolds: [ConfigurationProblem] = []
    /// The holds among ``uploadHolds`` that no sink enforces by itself:
    /// while one is there, the agent holds every upload with its reason.
    package var heldUploads: [ConfigurationProblem] = []

    package enum LogTarget: String, Sendable { case auto, journal, stderr }

    /// The queue file actually used.
    package var resolvedQueuePath: String { queuePath ?? stateDirectory + "/queue.sqlite" }
    /// Where the logged-in identity is cached (`users.json`, mode 0600).
    package var identityDirectory: String { stateDirectory + "/identity" }
    /// Where a `discard` client reset writes its backups.
    package var clientResetBackupDirectory: String {
        clientReset.backupDirectory ?? stateDirectory + "/client-reset-backups"
    }
    /// A socket input's socket: its `socket` key, else `<state_directory>/ingestd.sock`.
    package func socketPath(of input: InputSettings) -> String { input.socket ?? stateDirectory + "/ingestd.sock" }
    /// The status file `ingestd status` reads.
    package var statusPath: String { stateDirectory + "/status.json" }

    package init(stateDirectory: String, types: [RecordType], inputs: [InputSettings]) {
        self.stateDirectory = stateDirectory
        self.types = types
        self.inputs = inputs
    }

    /// The default state directory for this environment.
    package static func defaultStateDirectory(environment: [String: String]) -> String {
        if let dir = environment["STATE_DIRECTORY"], !dir.isEmpty {
            // systemd may list several, separated by ':'; the first is ours.
            return String(dir.split(separator: ":").first ?? Substring(dir))
        }
        if let xdg = environment["XDG_STATE_HOME"], !xdg.isEmpty { return xdg + "/ingestd" }
        return (environment["HOME"] ?? ".") + "/.local/state/ingestd"
    }

    /// The record types as they leave the queue: each with the acceptance
    /// fields `[delivery.TYPE]` adds (optional; the time a timestamp, the
    /// clock a string), so a sink that makes columns from the types makes
    /// them for these too.
    package var deliveredTypes: [RecordType] {
        types.map { type in
            guard let stamping = acceptanceStamps[type.name] else { return type }
            var fields = type.fields
            if let name = stamping.timeField { fields.append(.init(name: name, type: .timestamp, isRequired: false)) }
            if let name = stamping.clockField { fields.append(.init(name: name, type: .string, isRequired: false)) }
            return (try? RecordType(name: type.name, fields: fields)) ?? type
        }
    }

    /// The queue configuration this agent configuration describes.
    package var queueConfiguration: QueueConfiguration {
        var q = QueueConfiguration(location: .file(path: resolvedQueuePath), objectTypes: types)
        q.settings = queue
        q.acceptanceStamps = acceptanceStamps
        q.typeDelivery = typeDelivery
        q.routing = queueRouting
        q.migrationBlock = migrations.isEmpty ? nil : FieldMigration.block(migrations)
        return q
    }
}
