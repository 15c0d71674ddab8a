import EdgeIngestCore

/// Everything `ingestd run` needs, with the defaults an operator gets when
/// the configuration file leaves a key out. etc/ingestd.toml documents every
/// key; ``AgentConfiguration/load(path:environment:)`` reads one.
public struct AgentConfiguration: Sendable {
    /// Where the queue and the status file live. The default is
    /// `$STATE_DIRECTORY` (set by systemd's `StateDirectory=`), else
    /// `$XDG_STATE_HOME/ingestd`, else `~/.local/state/ingestd`.
    public var stateDirectory: String
    /// The queue file. The default is `<state_directory>/queue.sqlite`.
    public var queuePath: String?
    public var maxBytes: Int64? = 256 << 20
    public var maxRecords: Int64?
    public var overflowPolicy: OverflowPolicy = .block
    public var durability: Durability = .powerLossSafe
    public var schemaVersion: Int64 = 0
    /// How records of older schema versions change (`[[migrations]]`).
    public var migrations: [FieldMigration] = []
    /// The queue's 64-byte encryption key (`queue.encryption_key_file`); never printed.
    public var encryptionKey: [UInt8]?
    /// Readings are committed in batches of at most this many. The default is 1000.
    public var commitMaxRecords = 1000
    /// …and at least this often while readings arrive. The default is 200 ms.
    public var commitIntervalMilliseconds = 200
    /// The declared record types.
    public var types: [RecordType]
    /// The inputs. The default is one stdin input reading NDJSON.
    public var inputs: [InputSettings]
    /// Rejected lines are appended here as NDJSON with the reason, if set.
    public var rejectsFile: String?
    /// `auto` (journal when stderr is the journal), `journal` or `stderr`.
    public var logTarget: LogTarget = .auto
    /// The lowest level logged. The default is `info`.
    public var logLevel: String = "info"
    /// How often a stats entry with every counter is logged; 0 turns it off. The default is 60 s.
    public var statsIntervalSeconds = 60
    /// How often the status file is rewritten. The default is 1 s.
    public var statusIntervalMilliseconds = 1000
    /// Where readings stream to; nil keeps them queued (no `[upload]` section).
    public var upload: UploadSettings?
    /// Where `[upload]` delivers: the ingest protocol (default) or a local archive.
    public var sink: SinkSettings = .ingestProtocol
    /// Log in to the backend (an `[auth]` section) instead of a static token.
    public var auth: AuthSettings?
    /// What a client reset demanded by the backend does.
    public var clientReset = ClientResetSettings()

    public enum LogTarget: String, Sendable { case auto, journal, stderr }

    /// The queue file actually used.
    public var resolvedQueuePath: String { queuePath ?? stateDirectory + "/queue.sqlite" }
    /// Where the logged-in identity is cached (`users.json`, mode 0600).
    public var identityDirectory: String { stateDirectory + "/identity" }
    /// Where a `discard` client reset writes its backups.
    public var clientResetBackupDirectory: String { clientReset.backupDirectory ?? stateDirectory + "/client-reset-backups" }
    /// The status file `ingestd status` reads.
    public var statusPath: String { stateDirectory + "/status.json" }

    public init(stateDirectory: String, types: [RecordType], inputs: [InputSettings]) {
        self.stateDirectory = stateDirectory
        self.types = types
        self.inputs = inputs
    }

    /// The default state directory for this environment.
    public static func defaultStateDirectory(environment: [String: String]) -> String {
        if let dir = environment["STATE_DIRECTORY"], !dir.isEmpty {
            // systemd may list several, separated by ':'; the first is ours.
            return String(dir.split(separator: ":").first ?? Substring(dir))
        }
        if let xdg = environment["XDG_STATE_HOME"], !xdg.isEmpty { return xdg + "/ingestd" }
        return (environment["HOME"] ?? ".") + "/.local/state/ingestd"
    }

    /// The queue configuration this agent configuration describes.
    public var queueConfiguration: QueueConfiguration {
        var q = QueueConfiguration(location: .file(path: resolvedQueuePath), objectTypes: types)
        q.maxBytes = maxBytes
        q.maxRecords = maxRecords
        q.overflowPolicy = overflowPolicy
        q.durability = durability
        q.schemaVersion = schemaVersion
        q.encryptionKey = encryptionKey
        q.migrationBlock = migrations.isEmpty ? nil : FieldMigration.block(migrations)
        return q
    }
}

/// One configured input.
public struct InputSettings: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable { case stdin, file, serial, http }
    public enum Format: String, Sendable, Hashable { case ndjson, csv }

    public var kind: Kind
    public var format: Format = .ndjson
    /// The record type of every reading, unless a reading names its own in
    /// `_type`. May be nil only when every reading carries `_type`.
    public var type: String?
    /// file: paths and globs to follow.
    public var paths: [String] = []
    /// serial: the tty device.
    public var device: String?
    /// serial: the baud rate. The default is 9600.
    public var baud = 9600
    /// Line delimiter byte. The default is "\n" (a trailing "\r" is dropped).
    public var delimiter: UInt8 = 0x0A
    /// Lines longer than this are rejected without being buffered whole. The default is 64 KiB.
    public var maxLineBytes = 64 * 1024
    /// file: how often to look for new data, rotations and new files. The default is 250 ms.
    public var pollIntervalMilliseconds = 250
    /// file: start at the end of files found at first start (true) or at their beginning (false, the default).
    public var startAtEnd = false
    /// A name for logs and status; the default is derived from the kind and path.
    public var name: String
    /// http: the server's settings.
    public var http: HTTPInputSettings?

    public init(kind: Kind, name: String) {
        self.kind = kind
        self.name = name
    }
}

/// An HTTP input (`kind = "http"`): serves the ingest protocol
/// (docs/PROTOCOL.md) so other EdgeIngest clients can send to this agent,
/// which commits what it receives to its own queue before answering.
public struct HTTPInputSettings: Sendable, Hashable {
    /// "host:port"; ":port" or "0.0.0.0:port" for every IPv4 interface, "[::]:port" for IPv6.
    public var listen: String
    /// If set, paths naming another app (`/…/apps/<other>/…`) are answered
    /// 404; `/ingest/v1/batches`, which names no app, is served either way.
    public var appID: String?
    public var limits = HTTPLimits()
    /// Connections served at once; more are answered 503. The default is 32.
    public var maxConnections = 32
    /// How long received `_id`s are remembered to drop re-sent records (at
    /// least this, at most twice); 0 turns deduplication off. The default is 1 hour.
    public var dedupWindowSeconds: Int64 = 3600
    /// Whether anonymous logins are allowed.
    public var anonymous = false
    /// API keys (`name sha256$…` per line).
    public var apiKeysFile: String?
    /// Email/password users (`email pbkdf2-sha256$…` per line).
    public var usersFile: String?

    public init(listen: String) {
        self.listen = listen
    }
}
