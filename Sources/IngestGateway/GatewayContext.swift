import EdgeIngestCore
import Logging

/// What a gateway (``IngestServer``) works with: its settings, the record
/// types it accepts, the queue it stores into, whom it tells what it did,
/// and whom it wakes after a commit. The agent's HTTP input makes one from
/// its configuration; a test makes one on an in-memory queue.
///
/// ```swift
/// let context = GatewayContext(
///     name: "http:0.0.0.0:8480", settings: GatewaySettings(listen: "0.0.0.0:8480"),
///     types: types, queue: queue, observer: counters, logger: logger)
/// let server = IngestServer(context: context, accounts: accounts, tokens: tokens)
/// ```
package struct GatewayContext: Sendable {
    /// The input's name, in every log line and rejection (`http:0.0.0.0:8480`).
    package var name: String
    package var settings: GatewaySettings
    /// The record type of a batch that names none (`EdgeIngest-Record-Type`);
    /// nil: every batch must name its type.
    package var defaultType: String?
    package let types: [RecordType]
    package let queue: DurableQueue
    /// Told of every answered batch, throttle and full queue (the agent's
    /// input counters: status, `/metrics`).
    package let observer: any GatewayObserver
    package let logger: Logger
    /// Woken after a commit that stored readings, so the uploader sends them at once.
    package var committed: WakeSignal?

    package init(
        name: String,
        settings: GatewaySettings,
        defaultType: String? = nil,
        types: [RecordType],
        queue: DurableQueue,
        observer: any GatewayObserver,
        logger: Logger,
        committed: WakeSignal? = nil
    ) {
        self.name = name
        self.settings = settings
        self.defaultType = defaultType
        self.types = types
        self.queue = queue
        self.observer = observer
        self.logger = logger
        self.committed = committed
    }
}

/// What a gateway reports as it answers: the agent keeps it in its input's
/// counters (status, `/metrics`); a test may count it. Called from the
/// gateway's worker threads, concurrently.
package protocol GatewayObserver: Sendable {
    /// A batch answered with readings stored, re-sends recognised, lines
    /// refused (by reason); `lines`: every line the batch held.
    func answered(lines: Int64, accepted: Int64, duplicates: Int64, rejectedByReason: [String: Int64])
    /// A batch refused 429: its account is over its quota.
    func throttled()
    /// A batch refused 503 because the queue is full: `problem` says so.
    func queueFull(problem: String)
}
