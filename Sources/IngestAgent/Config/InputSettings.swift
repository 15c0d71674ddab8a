import EdgeIngestCore

/// One configured input.
public struct InputSettings: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable { case stdin, file, serial, http, socket, mqtt }
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
    /// socket: the Unix socket `ingestd send` writes to. The default is
    /// `<state_directory>/ingestd.sock` (``AgentConfiguration/socketPath(of:)``).
    public var socket: String?
    /// socket: the group the socket is given (mode 0660), so its members may
    /// send; nil leaves it to the agent's user (mode 0600).
    public var socketGroup: String?
    /// http: the server's settings.
    public var http: HTTPInputSettings?
    /// mqtt: the broker and the subscriptions.
    public var mqtt: MQTTInputSettings?

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
    /// Connections open at once. When all are taken, the longest-quiet
    /// connection that never sent valid credentials is closed to make room;
    /// with none, newcomers are answered 503. The default is 512.
    public var maxConnections = 512
    /// Connections open at once from one address (a NAT in front of many
    /// boxes counts once: raise it there). More are answered 503. The default is 64.
    public var maxConnectionsPerAddress = 64
    /// Threads that run requests (decode, validate, store, answer); at most
    /// `maxConnections`. More of them gather more batches into each group
    /// commit: 8 → 32 took the gateway from ~3.1–3.4 to ~2.3–2.6 CPU-s per
    /// million readings (docs/BENCHMARKS.md). Idle, a worker costs its stack
    /// and no wakeups. The default is 32.
    public var workerThreads = 32
    /// How long received `_id`s are remembered to drop re-sent records (at
    /// least this, at most twice); 0 turns deduplication off. The default is 1 hour.
    public var dedupWindowSeconds: Int64 = 3600
    /// Whether anonymous logins are allowed.
    public var anonymous = false
    /// API keys (`name sha256$…` per line).
    public var apiKeysFile: String?
    /// Email/password users (`email pbkdf2-sha256$…` per line).
    public var usersFile: String?
    /// A string field of every declared type that holds the account a
    /// record came from (Realm's `owner_id`): the server writes the
    /// sender's user id there when it is missing and refuses a record that
    /// names another account (`owner_mismatch`); the SQLite archive keys its
    /// tables on (this field, `_id`). nil: records carry no owner.
    public var ownerField: String?
    /// Whether the accounts may share one `_id` space in the sink (a sink
    /// keyed on `_id` alone, no ``ownerField``): then one account's reading
    /// under an `_id` another sent first is answered as accepted and never
    /// stored. Only for fleets whose ids cannot collide across accounts
    /// (ObjectIds made by each box's own processes). Without it, accounts
    /// and no owner field hold uploads (docs/PROTOCOL.md, "Accounts are
    /// tenants").
    public var sharedIDSpace = false
    /// Records a second each account may send (a token bucket holding
    /// ``quotaBurstSeconds`` of it); over it, batches are answered 429 with
    /// Retry-After. nil: no limit.
    public var quotaRecordsPerSecond: Int?
    /// Bytes a second (after gzip is undone) each account may send; nil: no limit.
    public var quotaBytesPerSecond: Int?
    /// Seconds of quota an account may save up and spend at once. The default is 10.
    public var quotaBurstSeconds = 10
    /// TLS (1.2 or newer): the certificate chain and its key, PEM. Both or
    /// neither; without them the input speaks plain HTTP. Looked at again
    /// at most once a second as connections arrive: a renewed certificate
    /// is used without a restart.
    public var tlsCertificateFile: String?
    public var tlsKeyFile: String?
    /// Mutual TLS: clients must present a certificate this CA (PEM) signed;
    /// such a client is the account `cert-<common name>` without a login.
    public var tlsClientCAFile: String?

    public init(listen: String) {
        self.listen = listen
    }
}
