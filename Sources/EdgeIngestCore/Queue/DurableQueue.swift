import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A durable, crash-safe, write-only queue of records on an embedded SQLite
/// file: the offline buffer between producers and the uploader.
///
/// Producers ``append(_:positions:)`` records and see counts; they can never
/// read records back. The uploader ``take(maxRecords:maxBytes:)``s the oldest
/// records as a ``QueueLease`` and ``acknowledge(_:count:)``s them once the
/// backend confirmed them; only then are they deleted.
///
/// ```swift
/// let queue = try DurableQueue.open(QueueConfiguration(
///     location: .file(path: "/var/lib/ingestd/queue.sqlite"),
///     objectTypes: [try WeatherSensor.recordType()]))
/// let record = try WeatherSensor.makeRecord(value: ["deviceId": "WX1278UIT", …])
/// try await queue.append([record])
/// ```
///
/// Opening the same file or in-memory identifier again in one process
/// returns the same queue; another process opening the same file gets
/// ``EdgeIngestError/Code/queueUnavailable``. The on-disk format and its
/// invariants are described in docs/QUEUE.md.
public final class DurableQueue: Sendable {
    /// The configuration the queue was opened with.
    public let configuration: QueueConfiguration
    /// If the file was damaged and quarantine was enabled, where it was moved.
    public let quarantinedFile: String?

    let logger: Logger
    let typesByName: [String: RecordType]
    let state: PlainMutex<State>
    /// Batches received from other clients, committed in groups
    /// (``receive(_:receipt:counters:)-(EncodedBatch,_,_)``).
    let receiveGroups = CommitGroups<AppendRequest, AppendAttempt>(maxGroup: 16)
    private let registryKey: String

    struct Lease {
        var serial: UInt64
        /// The segments it takes records of: never dropped while it is out.
        var segmentIDs: Set<Int64>
    }

    struct State: ~Copyable {
        var store: QueueStore?
        var queuedRecords: Int64
        var queuedBytes: Int64
        var oldestEnqueuedAt: Int64?
        var counters: [String: Int64]
        /// When repair last forgot damaged rows of the gateway's memory.
        var gatewayMemoryForgottenAt: Int64? = nil
        /// The leases out, by sink id (0 with one sink): one per sink.
        var leases: [Int: Lease] = [:]
        var leaseSerial: UInt64 = 0
        /// The sinks and each type's routing (``SinkTable``).
        var sinks = SinkTable()
        /// With several sinks, what each still owes: records and bytes.
        var sinkQueued: [Int: (records: Int64, bytes: Int64)] = [:]
        /// With several sinks, per sink: no segment before this id is routed
        /// to it any more (where its next take starts reading).
        var sinkScanFrom: [Int: Int64] = [:]
        /// Every lease's segments: none is dropped while a lease has it.
        var leasedSegments: Set<Int64> { leases.values.reduce(into: Set<Int64>()) { $0.formUnion($1.segmentIDs) } }
        /// Bumped whenever space is freed; producers waiting for space
        /// compare it to decide whether to sleep.
        var spaceGeneration: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
        /// The descriptor holding the file's flock; -1 in memory or once closed.
        var lockDescriptor: Int32 = -1
        /// The recent `_id`s readings are checked against, once asked for.
        var recentIDs: RecentIDs?
        /// When (monotonic ms) queued records were last checked against
        /// their types' maximum age.
        var expiredAt: Int64?

        func openStore(_ name: String) throws -> QueueStore {
            guard let store else {
                throw EdgeIngestError(.queueUnavailable, "The queue \(name) is closed.")
            }
            return store
        }
    }

    /// Opens (creating if needed) the queue described by `configuration`.
    ///
    /// - Throws: ``EdgeIngestError``: ``EdgeIngestError/Code/queueCorrupt`` for
    ///   a damaged file (left untouched unless
    ///   ``QueueConfiguration/quarantineCorruptFile`` is set),
    ///   ``EdgeIngestError/Code/queueUnavailable`` when the file cannot be
    ///   created or another process holds it,
    ///   ``EdgeIngestError/Code/queueFormatTooNew``, or
    ///   ``EdgeIngestError/Code/invalidConfiguration``.
    public static func open(
        _ configuration: QueueConfiguration,
        logger: Logger = Logger(label: "edgeingest.queue")
    )
        throws -> DurableQueue
    {
        let configuration = try configuration.validated()
        let key = registryKey(for: configuration.location) + (configuration.readOnly ? "#read-only" : "")
        return try QueueRegistry.shared.open(key: key) { key in
            try DurableQueue(configuration: configuration, logger: logger, registryKey: key)
        } mismatch: { existing in
            existing.configuration.settingsDiffering(from: configuration)
        }
    }

    /// Opens an existing queue file to read it while an agent may be
    /// appending to and uploading from it: no lock is taken and nothing is
    /// written (no migration, compaction or key set-up). Reads see the last
    /// commit; anything that would write fails. For `ingestd queue stats`,
    /// `queue peek` and `dead-letter list|export` on a running agent.
    ///
    /// ```swift
    /// let queue = try DurableQueue.openForReading(configuration)
    /// print(try queue.statistics().queuedRecords)
    /// ```
    public static func openForReading(
        _ configuration: QueueConfiguration,
        logger: Logger = Logger(label: "edgeingest.queue")
    ) throws -> DurableQueue {
        var configuration = configuration
        configuration.readOnly = true
        configuration.shouldCompactOnLaunch = nil
        return try open(configuration, logger: logger)
    }

    private init(configuration: QueueConfiguration, logger: Logger, registryKey: String) throws {
        self.configuration = configuration
        self.logger = logger
        self.registryKey = registryKey
        self.typesByName = Dictionary(uniqueKeysWithValues: configuration.objectTypes.map { ($0.name, $0) })
        let name = configuration.location.description
        var quarantined: String?
        let store: QueueStore
        var fd: Int32 = -1
        switch configuration.location.kind {
        case .memory:
            store = try QueueStore(
                db: SQLiteConnection(path: ":memory:", displayName: name),
                isFile: false,
                durability: configuration.durability
            )
        case .file(let path) where configuration.readOnly:
            guard access(path, R_OK) == 0 else {
                throw EdgeIngestError(
                    .queueUnavailable,
                    "No queue at '\(path)' (\(String(cString: strerror(errno)))): has the agent run with this configuration?"
                )
            }
            try QueueFile.checkNotTruncated(path: path)
            store = try QueueStore(
                db: SQLiteConnection(path: path, displayName: path, readOnly: true),
                isFile: true,
                durability: configuration.durability,
                readOnly: true
            )
        case .file(let path):
            try QueueFile.prepare(path: path)
            fd = try QueueFile.lock(path: path)
            do {
                try QueueFile.checkNotTruncated(path: path)
                store = try DurableQueue.openFileStore(path: path, configuration: configuration)
            } catch let error as EdgeIngestError
                where error.code == .queueCorrupt && configuration.quarantineCorruptFile
            {
                let moved = try QueueFile.quarantine(path: path, now: wallClockMilliseconds())
                logger.error(
                    "Queue file was damaged and has been moved aside; starting an empty queue",
                    metadata: ["queue.path": "\(path)", "queue.quarantined": "\(moved)", "error": "\(error.message)"]
                )
                quarantined = moved
                QueueFile.closeDescriptor(fd)
                try QueueFile.prepare(path: path)
                fd = try QueueFile.lock(path: path)
                store = try DurableQueue.openFileStore(path: path, configuration: configuration)
            } catch {
                QueueFile.closeDescriptor(fd)
                throw error
            }
        }
        quarantinedFile = quarantined
        store.compresses = configuration.settings.compression == .zstd
        store.receivedIDsCacheBytes = configuration.settings.receivedIDsCacheBytes
        do {
            try DurableQueue.applyEncryption(store, configuration: configuration)
            try DurableQueue.checkSchemaVersion(store, configuration: configuration, logger: logger)
            try DurableQueue.compactIfAsked(store, configuration: configuration, logger: logger)
            let sinks = try DurableQueue.openSinks(store, configuration: configuration, logger: logger)
            store.sinkTable = sinks
            var sinkQueued: [Int: (records: Int64, bytes: Int64)] = [:]
            if !sinks.isSingle {
                for id in sinks.byID.keys { sinkQueued[id] = try store.sinkBacklog(sink: id) }
            }
            let totals = try store.totals()
            state = PlainMutex(
                State(
                    store: store,
                    queuedRecords: totals.records,
                    queuedBytes: totals.bytes,
                    oldestEnqueuedAt: totals.oldestEnqueuedAt,
                    counters: try store.counters(),
                    gatewayMemoryForgottenAt: try store.meta(DurableQueue.gatewayMemoryForgottenKey),
                    sinks: sinks,
                    sinkQueued: sinkQueued,
                    lockDescriptor: fd
                )
            )
        } catch {
            if fd >= 0 { QueueFile.closeDescriptor(fd) }
            throw error
        }
    }

    private static func openFileStore(path: String, configuration: QueueConfiguration) throws -> QueueStore {
        let store = try QueueStore(
            db: SQLiteConnection(path: path, displayName: path),
            isFile: true,
            durability: configuration.durability
        )
        if configuration.verifyIntegrityOnOpen {
            let check = try store.db.prepare("PRAGMA quick_check(1)")
            _ = try check.step()
            let verdict = check.string(0)
            guard verdict == "ok" else {
                throw EdgeIngestError(
                    .queueCorrupt,
                    "The queue file '\(path)' failed SQLite's integrity check (\(verdict)). It was left untouched: move it away to start a new queue, or enable quarantine."
                )
            }
        }
        return store
    }

    /// Checks the key against the file's key check before anything is read
    /// or written, and installs the cipher. A first key on an empty queue is
    /// recorded, and the file rewritten so no earlier plaintext lingers in
    /// free pages.
    private static func applyEncryption(_ store: QueueStore, configuration: QueueConfiguration) throws {
        let name = configuration.location.description
        let stored = try store.meta("key_check")
        guard let key = configuration.encryptionKey else {
            if stored != nil {
                throw EdgeIngestError(
                    .encryption,
                    "The queue \(name) is encrypted: open it with its 64-byte encryption key (queue.encryption_key_file). Nothing was changed."
                )
            }
            return
        }
        let cipher = try PayloadCipher(key: key, queueName: name)
        if stored == nil, configuration.readOnly { return }  // nothing is encrypted yet: nothing to open
        if let stored {
            guard stored == cipher.keyCheck else {
                throw EdgeIngestError(
                    .encryption,
                    "The encryption key does not match the one the queue \(name) was created with. Nothing was changed: use the right key file."
                )
            }
        } else {
            guard try store.totals().records == 0, try store.deadLetterCount() == 0 else {
                throw EdgeIngestError(
                    .encryption,
                    "The queue \(name) holds unencrypted records, so it cannot be given a key. Export them (ingestd export), start an encrypted queue and import them. Nothing was changed."
                )
            }
            try store.setMeta("key_check", cipher.keyCheck)
            if configuration.location.path != nil { try store.compactFile() }
        }
        store.cipher = cipher
    }

    private static func checkSchemaVersion(
        _ store: QueueStore,
        configuration: QueueConfiguration,
        logger: Logger
    ) throws {
        let stored = try store.meta("max_schema_version") ?? 0
        if stored > configuration.schemaVersion {
            throw EdgeIngestError(
                .invalidConfiguration,
                "The queue \(configuration.location) holds records of schema version \(stored), newer than the configured \(configuration.schemaVersion). Open it with schema version \(stored) or higher; nothing was changed."
            )
        }
        if stored < configuration.schemaVersion, !configuration.readOnly {
            try store.db.transaction {
                if let block = configuration.migrationBlock {
                    try migrate(store, configuration: configuration, block: block, logger: logger)
                }
                try store.setMeta("max_schema_version", configuration.schemaVersion)
            }
        }
    }

    /// Runs the migration block over every pending record of an older
    /// schema version and rewrites those segments in place (inside the
    /// caller's transaction: any failure leaves the file as it was).
    private static func migrate(
        _ store: QueueStore,
        configuration: QueueConfiguration,
        block: MigrationBlock,
        logger: Logger
    ) throws {
        let types = Dictionary(uniqueKeysWithValues: configuration.objectTypes.map { ($0.name, $0) })
        var rewrites:
            [(
                id: Int64, type: String, enqueuedAt: Int64, acceptance: Acceptance?, records: Int64, ids: [UInt8],
                payload: [UInt8]
            )] =
                []
        var damaged: [(id: Int64, problem: String)] = []
        try store.scanSegments { row in
            if let problem = row.damage {
                damaged.append((row.id, problem))
                return true
            }
            guard row.schemaVersion < configuration.schemaVersion else { return true }
            guard let type = types[row.type] else {
                throw EdgeIngestError(
                    .migrationFailed,
                    "The queue holds '\(row.type)' records of schema version \(row.schemaVersion), a type no longer declared: declare it, or export those records first. Nothing was changed."
                )
            }
            let ids = Array(row.ids[(Int(row.consumed) * 12)..<row.ids.count])
            var payload: [UInt8] = []
            let first = Int(row.consumed)
            let records = try forEachLine(in: row.payload, from: Int(row.consumedBytes)) { index, line in
                let id = ObjectId(
                    unsafeBytes: UnsafeRawBufferPointer(
                        rebasing: row.ids[(first + index) * 12..<(first + index + 1) * 12]
                    )
                )
                do {
                    var values = try StoredRecordDecoder.decode(line)
                    values["_id"] = nil
                    var record = MigrationRecord(typeName: row.type, id: id, values: values)
                    try block(&record, row.schemaVersion)
                    record.values["_id"] = .objectId(id)
                    try type.validate(record.values).encodeJSON(into: &payload)
                    payload.append(UInt8(ascii: "\n"))
                } catch {
                    let reason = (error as? EdgeIngestError)?.message ?? "\(error)"
                    throw EdgeIngestError(
                        .migrationFailed,
                        "Migrating record \(id) ('\(row.type)', schema version \(row.schemaVersion) → \(configuration.schemaVersion)) failed: \(reason) Nothing was changed.",
                        cause: error as? EdgeIngestError
                    )
                }
                return true
            }
            rewrites.append((row.id, row.type, row.enqueuedAt, row.acceptance, Int64(records), ids, payload))
            return true
        }
        // A damaged segment is never migrated (it would get a fresh checksum).
        for (id, problem) in damaged {
            let held = try store.quarantine(segment: id, problem: problem, at: wallClockMilliseconds())
            logQuarantined(.segment(id), records: held.records, problem: problem, in: configuration, logger)
        }
        for r in rewrites {
            try store.rewrite(
                segment: r.id,
                type: r.type,
                enqueuedAt: r.enqueuedAt,
                acceptance: r.acceptance,
                schemaVersion: configuration.schemaVersion,
                records: r.records,
                ids: r.ids,
                payload: r.payload
            )
        }
    }

    private static func compactIfAsked(_ store: QueueStore, configuration: QueueConfiguration, logger: Logger) throws {
        guard let predicate = configuration.shouldCompactOnLaunch, configuration.location.path != nil else { return }
        let usage = try store.pageUsage()
        guard predicate(usage.totalBytes, usage.totalBytes - usage.freeBytes) else { return }
        try store.compactFile()
        let after = try store.pageUsage()
        logger.log(
            level: configuration.routineLogLevel,
            "Compacted the queue file on launch",
            metadata: ["queue.bytes_before": "\(usage.totalBytes)", "queue.bytes_after": "\(after.totalBytes)"]
        )
    }

    deinit {
        close()  // and out of the registry
    }

    /// Closes the queue: waiting producers fail, later calls fail. Called
    /// automatically when the last reference goes away.
    public func close() {
        let (waiters, fd) = state.withLock { state -> ([CheckedContinuation<Void, Never>], Int32) in
            // Release the connection before the flock descriptor: closing any
            // descriptor of the file drops SQLite's POSIX locks on it.
            try? state.store?.foldReceivedIDs()
            state.store = nil
            let waiting = Array(state.waiters.values)
            state.waiters = [:]
            let fd = state.lockDescriptor
            state.lockDescriptor = -1
            return (waiting, fd)
        }
        waiters.forEach { $0.resume() }
        if fd >= 0 { QueueFile.closeDescriptor(fd) }
        // A closed queue is never handed out again: the next open (a reload
        // with new types, say) gets a queue of its own, even while a late
        // reference to this one is still being let go.
        QueueRegistry.shared.remove(key: registryKey, ifMatching: ObjectIdentifier(self))
    }

    // MARK: Reading counts

    /// The queue's contents and counters now.
    public func statistics() throws -> QueueStatistics {
        let snapshot = state.withLock { state in
            (
                state.queuedRecords, state.queuedBytes, state.oldestEnqueuedAt, state.counters, state.store != nil,
                state.gatewayMemoryForgottenAt, state.oldestEnqueuedAt == nil ? nil : Self.oldestAge(state.store)
            )
        }
        guard snapshot.4 else {
            throw EdgeIngestError(.queueUnavailable, "The queue \(configuration.location) is closed.")
        }
        var dropped: [String: Int64] = [:]
        var application: [String: Int64] = [:]
        for (name, value) in snapshot.3 {
            if name.hasPrefix("dropped.") { dropped[String(name.dropFirst("dropped.".count))] = value }
            if name.hasPrefix("app.") { application[String(name.dropFirst("app.".count))] = value }
        }
        var fileBytes: Int64 = 0
        if let path = configuration.location.path {
            fileBytes = QueueFile.size(of: path) + QueueFile.size(of: path + "-wal")
        }
        return QueueStatistics(
            queuedRecords: snapshot.0,
            queuedBytes: snapshot.1,
            oldestEnqueuedAt: snapshot.2,
            appendedTotal: snapshot.3["appended_total"] ?? 0,
            acknowledgedTotal: snapshot.3["acknowledged_total"] ?? 0,
            deadLetterRecords: snapshot.3["dead_lettered_total"] ?? 0,
            quarantinedRecords: snapshot.3["quarantined_total"] ?? 0,
            droppedByReason: dropped,
            fileBytes: fileBytes,
            counters: application,
            gatewayMemoryForgottenAt: snapshot.5,
            oldestAgeMilliseconds: snapshot.6
        )
    }

    /// How long the oldest queued record has waited (``QueueAge``: the
    /// boot-time clock within its boot, else corrected times), or nil when
    /// no clock can tell (or the head cannot be read).
    private static func oldestAge(_ store: QueueStore?) -> Int64? {
        guard let store, let head = try? store.head(), let offsets = try? store.bootOffsets() else { return nil }
        return QueueAge.of(enqueuedAt: head.enqueuedAt, acceptance: head.acceptance, offsets: offsets, now: .current())
    }

    /// The committed position of every input (see ``SourcePosition``).
    public func positions() throws -> [String: String] {
        try state.withLock { state in try state.openStore(configuration.location.description).positions() }
    }

    private static func registryKey(for location: QueueConfiguration.Location) -> String {
        switch location.kind {
        case .memory(let identifier): return "memory:" + identifier
        case .file(let path):
            let directory = QueueFile.parentDirectory(of: path)
            let name = path.split(separator: "/").last.map(String.init) ?? path
            if let resolved = realpath(directory, nil) {
                defer { free(resolved) }
                return "file:" + String(cString: resolved) + "/" + name
            }
            return "file:" + path
        }
    }
}

/// The queues open in this process, so that opening a path or in-memory
/// identifier twice shares one connection (and one in-memory database).
final class QueueRegistry: Sendable {
    static let shared = QueueRegistry()

    // Unchecked: `queue` is read and written only under `entries`' lock.
    private final class WeakQueue: @unchecked Sendable {
        weak var queue: DurableQueue?
        let id: ObjectIdentifier
        init(_ queue: DurableQueue) {
            self.queue = queue
            id = ObjectIdentifier(queue)
        }
    }

    private let entries = PlainMutex<[String: WeakQueue]>([:])

    func open(
        key: String,
        create: (String) throws -> DurableQueue,
        mismatch: (DurableQueue) -> [String]
    ) throws -> DurableQueue {
        // Opening is rare; holding the lock while creating keeps two threads
        // from opening one file twice. A strong reference loaded here leaves
        // the closure alive, so no deinit (which takes this lock) runs inside.
        let queue = try entries.withLock { entries -> DurableQueue in
            if let existing = entries[key]?.queue { return existing }
            let queue = try create(key)
            entries[key] = WeakQueue(queue)
            return queue
        }
        let differing = mismatch(queue)
        guard differing.isEmpty else {
            throw EdgeIngestError(
                .invalidConfiguration,
                "The queue \(queue.configuration.location) is already open in this process with a different \(differing.joined(separator: ", ")). Open it with the same configuration, or close the other handle first."
            )
        }
        return queue
    }

    func remove(key: String, ifMatching id: ObjectIdentifier) {
        entries.withLock { entries in
            if entries[key]?.id == id { entries[key] = nil }
        }
    }
}
