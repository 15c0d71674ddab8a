import Logging

/// Carries out a client reset for one queue on the uploader's thread, as
/// the configuration's ``ClientResetMode`` says, and keeps the upload
/// session id (`EdgeIngest-Session`) that a reset renews.
package final class ClientResetHandler: Sendable {
    let queue: DurableQueue
    let configuration: IngestConfiguration
    let logger: Logger
    private let state: PlainMutex<State>

    struct State {
        var session: String
        var pending: String?
        /// The last reset was handled by recovering (re-sending under a new session).
        var recovered = false
        weak var upload: BackgroundUpload?
    }

    package init(queue: DurableQueue, configuration: IngestConfiguration, logger: Logger) throws {
        self.queue = queue
        self.configuration = configuration
        self.logger = logger
        var nonce = try queue.meta("session_nonce")
        if nonce == nil {
            nonce = Int64.random(in: 1..<Int64.max)
            try queue.setMeta("session_nonce", nonce!)
        }
        let epoch = try queue.meta("session_epoch") ?? 0
        state = PlainMutex(State(session: ClientResetHandler.session(nonce!, epoch)))
    }

    private static func session(_ nonce: Int64, _ epoch: Int64) -> String {
        String(UInt64(bitPattern: nonce), radix: 16) + "-" + String(epoch)
    }

    func attach(_ upload: BackgroundUpload) { state.withLock { $0.upload = upload } }

    /// The current session id, sent with every batch.
    package var session: String { state.withLock { $0.session } }

    /// The reason of a reset waiting for ``IngestRealm/resolveClientReset(discard:)``.
    var pendingReason: String? { state.withLock { $0.pending } }

    /// Starts a new session: the backend sees a client it does not know and
    /// accepts its records (re-sent with the same `_id`s).
    private func renewSession() throws {
        let (nonce, epoch) = try ClientResetHandler.renewSession(of: queue)
        state.withLock {
            $0.session = ClientResetHandler.session(nonce, epoch)
            $0.pending = nil
        }
    }

    /// The uploader's hook: returns true when uploading may resume.
    package func handle(reason: String, recoverable: Bool, storedSinceLastReset: Bool = true) -> Bool {
        let mode = configuration.clientResetMode
        var kind = mode.kind
        let recoveredBefore = state.withLock { $0.recovered }
        if recoveredBefore && !storedSinceLastReset && (kind == .recover || kind == .recoverOrDiscard) {
            // The session a recovery started was refused before anything was stored: recovering again would loop.
            logger.error(
                "The backend refused the recovered session too; recovery failed",
                metadata: ["ingest.reason": "\(reason)"]
            )
            kind = kind == .recover ? .manual : .discard
        }
        if kind == .recoverOrDiscard { kind = recoverable ? .recover : .discard }
        if kind == .recover && !recoverable {
            logger.error(
                "The backend says the pending records cannot be recovered; falling back to a manual client reset",
                metadata: ["ingest.reason": "\(reason)"]
            )
            kind = .manual
        }
        state.withLock { $0.recovered = kind == .recover }
        do {
            switch kind {
            case .recover:
                let before = try mode.beforeReset == nil && mode.afterReset == nil ? nil : frozenCopy(discarding: false)
                if let before { mode.beforeReset?(before) }
                try renewSession()
                logger.notice(
                    "Client reset: re-uploading the pending records under a new session",
                    metadata: ["ingest.reason": "\(reason)"]
                )
                if let before, let after = liveRealm() { mode.afterReset?(before, after) }
                return true
            case .discard, .recoverOrDiscard:
                let before = try frozenCopy(discarding: true)
                mode.beforeReset?(before)
                try renewSession()
                logger.warning(
                    "Client reset: discarded the pending records (counted as dropped, reason client_reset)",
                    metadata: [
                        "ingest.reason": "\(reason)",
                        "ingest.discarded": "\((try? before.statistics().queuedRecords) ?? 0)",
                    ]
                )
                if let after = liveRealm() { mode.afterReset?(before, after) }
                return true
            case .manual:
                state.withLock { $0.pending = reason }
                try? queue.setMeta("client_reset_pending", 1)
                let error = EdgeIngestError(
                    .clientResetRequired,
                    "The backend requires a client reset (\(reason)). Uploading is paused and every record is kept: call resolveClientReset(discard:) (ingestd reset --recover or --discard)."
                )
                if let handler = mode.errorHandler, let realm = liveRealm() {
                    handler(error, realm)
                } else {
                    SyncManager.errorHandler?(error, configuration.user)
                }
                return false
            }
        } catch {
            logger.error(
                "The client reset failed; uploading is paused and every record is kept",
                metadata: ["error": "\(error)"]
            )
            state.withLock { $0.pending = reason }
            return false
        }
    }

    /// Starts a new session in the queue file; returns its nonce and epoch.
    static func renewSession(of queue: DurableQueue) throws -> (Int64, Int64) {
        let nonce = try queue.meta("session_nonce") ?? 0
        let epoch = (try queue.meta("session_epoch") ?? 0) + 1
        try queue.setMeta("session_epoch", epoch)
        try queue.setMeta("client_reset_pending", 0)
        return (nonce, epoch)
    }

    /// Whether a manual client reset waits in this queue file for
    /// `ingestd reset` (it survives restarts).
    package static func isPending(in queue: DurableQueue) throws -> Bool {
        try queue.meta("client_reset_pending") == 1
    }

    /// Resolves a client reset on a queue no uploader runs on (`ingestd
    /// reset` with the agent stopped): with `discardInto`, the pending
    /// records move there (counted as dropped, reason `client_reset`).
    /// Returns the records discarded.
    package static func resolveStopped(queue: DurableQueue, discardInto backup: DurableQueue?) throws -> Int64 {
        let discarded = try backup.map { try queue.copyPending(into: $0, discard: .clientReset) } ?? 0
        _ = try renewSession(of: queue)
        return discarded
    }

    /// Resolves a pending (manual) reset: re-upload, or discard after
    /// copying the pending records into `backup` (if given).
    func resolve(discard: Bool, backup: IngestRealm?) throws {
        if discard {
            if let backup {
                try queue.copyPending(into: backup.queue, discard: .clientReset)
            } else {
                _ = try frozenCopy(discarding: true)  // no backup asked for: the copy is let go
            }
        }
        try renewSession()
        state.withLock { $0.upload }?.uploader.resume()
    }

    /// An in-memory copy of the pending records (the `before` realm); with
    /// `discarding`, the copied records leave the live queue atomically.
    private func frozenCopy(discarding: Bool) throws -> IngestRealm {
        var frozen = IngestConfiguration()
        frozen.inMemoryIdentifier = "client-reset-before-\(ObjectId.generate())"
        frozen.recordTypes = queue.configuration.objectTypes
        frozen.schemaVersion = queue.configuration.schemaVersion
        frozen.maxBytes = nil
        let realm = try IngestRealm(
            opened: DurableQueue.open(frozen.queueConfiguration(), logger: logger),
            configuration: frozen,
            frozen: true
        )
        try queue.copyPending(into: realm.queue, discard: discarding ? .clientReset : nil)
        return realm
    }

    private func liveRealm() -> IngestRealm? {
        guard let upload = state.withLock({ $0.upload }) else { return nil }
        return IngestRealm(opened: queue, configuration: configuration, upload: upload, resetHandler: self)
    }
}
