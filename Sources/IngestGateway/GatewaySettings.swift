/// A gateway's settings: an agent's HTTP input (`kind = "http"`, its keys
/// decoded by the agent's configuration) serves the ingest protocol
/// (docs/PROTOCOL.md) so other EdgeIngest clients can send to this agent,
/// which commits what it receives to its own queue before answering.
///
/// ```swift
/// var settings = GatewaySettings(listen: "0.0.0.0:8480")
/// settings.apiKeysFile = "/etc/ingestd/api-keys"
/// settings.ownerField = "owner_id"
/// ```
package struct GatewaySettings: Sendable, Hashable {
    /// "host:port"; ":port" or "0.0.0.0:port" for every IPv4 interface, "[::]:port" for IPv6.
    package var listen: String
    /// If set, paths naming another app (`/…/apps/<other>/…`) are answered
    /// 404; `/ingest/v1/batches`, which names no app, is served either way.
    package var appID: String?
    package var limits = HTTPLimits()
    /// Connections open at once. When all are taken, the longest-quiet
    /// connection that never sent valid credentials is closed to make room;
    /// with none, newcomers are answered 503. The default is 512.
    package var maxConnections = 512
    /// Connections open at once from one address (a NAT in front of many
    /// boxes counts once: raise it there). More are answered 503. The default is 64.
    package var maxConnectionsPerAddress = 64
    /// Threads that run requests (decode, validate, store, answer); at most
    /// `maxConnections`. More of them gather more batches into each group
    /// commit: 8 → 32 took the gateway from ~3.1–3.4 to ~2.3–2.6 CPU-s per
    /// million readings (docs/BENCHMARKS.md). Idle, a worker costs its stack
    /// and no wakeups. The default is 32.
    package var workerThreads = 32
    /// How long received `_id`s are remembered to drop re-sent records (at
    /// least this, at most twice); 0 turns deduplication off. The default is 1 hour.
    package var dedupWindowSeconds: Int64 = 3600
    /// Whether anonymous logins are allowed.
    package var anonymous = false
    /// API keys (`name sha256$…` per line).
    package var apiKeysFile: String?
    /// Email/password users (`email pbkdf2-sha256$…` per line).
    package var usersFile: String?
    /// A string field of every declared type that holds the account a
    /// record came from (Realm's `owner_id`): the server writes the
    /// sender's user id there when it is missing and refuses a record that
    /// names another account (`owner_mismatch`); the SQLite archive keys its
    /// tables on (this field, `_id`). nil: records carry no owner.
    package var ownerField: String?
    /// Whether the accounts may share one `_id` space in the sink (a sink
    /// keyed on `_id` alone, no ``ownerField``): then one account's reading
    /// under an `_id` another sent first is answered as accepted and never
    /// stored. Only for fleets whose ids cannot collide across accounts
    /// (ObjectIds made by each box's own processes). Without it, accounts
    /// and no owner field hold uploads (docs/PROTOCOL.md, "Accounts are
    /// tenants").
    package var sharedIDSpace = false
    /// Records a second each account may send (a token bucket holding
    /// ``quotaBurstSeconds`` of it); over it, batches are answered 429 with
    /// Retry-After. nil: no limit.
    package var quotaRecordsPerSecond: Int?
    /// Bytes a second (after gzip is undone) each account may send; nil: no limit.
    package var quotaBytesPerSecond: Int?
    /// Seconds of quota an account may save up and spend at once. The default is 10.
    package var quotaBurstSeconds = 10
    /// TLS (1.2 or newer): the certificate chain and its key, PEM. Both or
    /// neither; without them the input speaks plain HTTP. Looked at again
    /// at most once a second as connections arrive: a renewed certificate
    /// is used without a restart.
    package var tlsCertificateFile: String?
    package var tlsKeyFile: String?
    /// Mutual TLS: clients must present a certificate this CA (PEM) signed;
    /// such a client is the account `cert-<common name>` without a login.
    package var tlsClientCAFile: String?

    package init(listen: String) {
        self.listen = listen
    }
}
