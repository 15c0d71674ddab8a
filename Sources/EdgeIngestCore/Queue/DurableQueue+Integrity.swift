import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What ``DurableQueue/verify()`` found.
public struct QueueVerification: Sendable, Hashable {
    /// One damaged row: where it is, how many records it held, what is wrong.
    public struct Damage: Sendable, Hashable {
        /// Which row.
        public enum Place: Sendable, Hashable {
            case segment(Int64)
            case deadLetter(Int64)
            /// A row of the gateway's memory (format 4): its table and key
            /// (a received-id group's, or a client session's nonce). It
            /// holds no readings.
            case gatewayMemory(table: String, key: [UInt8])
        }
        public var place: Place
        public var records: Int64
        public var problem: String

        /// `segment 12` or `dead letter 3`.
        public var location: String {
            switch place {
            case .segment(let id): "segment \(id)"
            case .deadLetter(let number): "dead letter \(number)"
            case .gatewayMemory(let table, let key):
                "\(table) row \(key.prefix(24).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())"
            }
        }
    }

    /// Segments read and checked.
    public var segmentsChecked = 0
    /// Records those segments hold (pending ones).
    public var recordsChecked: Int64 = 0
    /// Segments written before format 3 (no checksum): checked by their
    /// structure only.
    public var segmentsWithoutChecksum = 0
    /// Dead letters read and checked.
    public var deadLettersChecked = 0
    /// Rows of the gateway's memory (received-id groups and client
    /// sessions) read and checked.
    public var gatewayMemoryRowsChecked = 0
    /// Rows that fail their checks.
    public var damage: [Damage] = []
    /// Records already in quarantine (found damaged earlier).
    public var quarantinedRecords: Int64 = 0
    /// `appended_total − (queued + acknowledged + dead letters +
    /// quarantined + dropped)`: records the counters say the file should
    /// hold but it does not (positive), or holds without their being
    /// counted (negative). 0 when the accounting holds.
    public var accountingGap: Int64 = 0
    /// What SQLite's own check (`PRAGMA quick_check`) or a failed read
    /// reported about the file's structure.
    public var fileProblems: [String] = []

    /// Whether nothing is wrong.
    public var isIntact: Bool { damage.isEmpty && accountingGap == 0 && fileProblems.isEmpty }
}

/// What ``DurableQueue/repair()`` did.
public struct QueueRepair: Sendable, Hashable {
    /// What was found before anything was changed.
    public var found: QueueVerification
    /// Rows moved to the quarantine table (never uploaded).
    public var quarantined: [QueueVerification.Damage] = []
    /// Records the counters accounted for but the file no longer held,
    /// now counted as dropped with reason `damaged` (positive), or records
    /// the file held without their being counted, added to
    /// `appended_total` (negative).
    public var accountingCorrection: Int64 = 0
    /// Set when SQLite reported the file's own structure damaged and the
    /// file was rebuilt from what could be read: where the damaged file was
    /// copied first.
    public var damagedFileCopy: String?
    /// Rows the rebuild found but could not read.
    public var rowsUnreadable = 0
    /// Small tables (counters, positions, meta) the rebuild could not read.
    public var tablesUnreadable: [String] = []
    /// Tables whose damaged definition in the schema the rebuild put back.
    public var schemaRowsRestored = 0
    /// Rows of the gateway's memory deleted as damaged, or whole tables of
    /// it the rebuild could not read: from now on (``gatewayMemoryForgottenAt``)
    /// a batch a client sends again may be stored twice, until the
    /// deduplication window has passed.
    public var gatewayMemoryForgotten: Int = 0
    /// When the gateway's memory was last found damaged and forgotten (ms
    /// since the epoch), or nil.
    public var gatewayMemoryForgottenAt: Int64?
}

extension DurableQueue {
    /// `meta` key: when the gateway's memory was found damaged and (part
    /// of it) forgotten, in ms since the epoch.
    static let gatewayMemoryForgottenKey = "received.forgotten_at"

    /// Repairs the queue file of `configuration` (the agent stopped):
    /// ``repair()`` in place when SQLite can read the whole file; otherwise
    /// first a rebuild from every row that can still be read (the damaged
    /// file is copied to `<file>.corrupt-<ms>` before anything changes),
    /// then ``repair()`` on the rebuilt file. A 0-byte file holds nothing
    /// to rebuild: it is moved aside and an empty queue started.
    ///
    /// ```swift
    /// let repair = try DurableQueue.repair(configuration)
    /// print(repair.quarantined.count, repair.accountingCorrection)
    /// ```
    ///
    /// `lastKnown`: the queue's numbers as last seen outside the file (the
    /// agent's status file). When the file's own counters went with the
    /// damage (an emptied file, an unreadable counters table), they are
    /// put back from these, so the readings the file no longer holds are
    /// counted as dropped (reason `damaged`) instead of vanishing from the
    /// accounting. At most what was uploaded since those numbers were
    /// taken is then counted as lost rather than uploaded.
    public static func repair(
        _ configuration: QueueConfiguration,
        lastKnown: QueueStatistics? = nil,
        logger: Logger = Logger(label: "edgeingest.queue")
    ) throws -> QueueRepair {
        guard let path = configuration.location.path else { return try open(configuration, logger: logger).repair() }
        var problems: [String] = []
        if QueueFile.isTruncated(path: path) {
            let fd = try QueueFile.lock(path: path)
            let moved = try QueueFile.quarantine(path: path, now: wallClockMilliseconds())
            QueueFile.closeDescriptor(fd)
            let fresh = try open(configuration, logger: logger)
            if let lastKnown { try fresh.restoreLostCounters(from: lastKnown) }
            var repair = try fresh.repair()
            repair.found.fileProblems = ["the file was empty (0 bytes): whatever it held is lost"]
            repair.damagedFileCopy = moved
            return repair
        }
        do {
            let queue = try open(configuration, logger: logger)
            let inPlace = try queue.repair()
            if inPlace.found.fileProblems.isEmpty { return inPlace }
            problems = inPlace.found.fileProblems
            queue.close()
        } catch let error as EdgeIngestError where error.code == .queueCorrupt {
            problems = [error.message]
        }
        let fd = try QueueFile.lock(path: path)
        let salvage: QueueSalvage.Outcome
        do {
            salvage = try QueueSalvage.rebuild(path: path, now: wallClockMilliseconds())
        } catch {
            QueueFile.closeDescriptor(fd)
            throw error
        }
        QueueFile.closeDescriptor(fd)
        logger.error(
            "Rebuilt a damaged queue file from what could be read",
            metadata: [
                "queue.path": "\(path)",
                "queue.damaged_copy": "\(salvage.savedCopy)",
                "rows.copied": "\(salvage.rowsCopied)",
                "rows.unreadable": "\(salvage.rowsUnreadable)",
            ]
        )
        let rebuilt = try open(configuration, logger: logger)
        if let lastKnown, salvage.tablesUnreadable.contains("counters") || rebuilt.lostItsCounters() {
            try rebuilt.restoreLostCounters(from: lastKnown)
        }
        var repair = try rebuilt.repair()
        let memoryLost = salvage.tablesUnreadable.filter { $0.hasPrefix("received_") }
        if !memoryLost.isEmpty {
            let now = wallClockMilliseconds()
            try rebuilt.setMeta(gatewayMemoryForgottenKey, now)
            repair.gatewayMemoryForgotten += memoryLost.count
            repair.gatewayMemoryForgottenAt = now
        }
        repair.found.fileProblems = problems + repair.found.fileProblems
        repair.damagedFileCopy = salvage.savedCopy
        repair.rowsUnreadable = salvage.rowsUnreadable
        repair.tablesUnreadable = salvage.tablesUnreadable
        repair.schemaRowsRestored = salvage.schemaRowsRestored
        return repair
    }

    /// Checks every stored segment and dead letter (checksum and
    /// structure), SQLite's own structure (`PRAGMA quick_check`) and the
    /// accounting identity, in one read transaction; changes nothing.
    /// Works on a queue opened with ``openForReading(_:logger:)`` while an
    /// agent appends and uploads.
    ///
    /// ```swift
    /// let report = try DurableQueue.openForReading(configuration).verify()
    /// if !report.isIntact { print(report.damage) }
    /// ```
    public func verify() throws -> QueueVerification {
        try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            try store.db.execute("BEGIN")
            defer { try? store.db.execute("COMMIT") }
            return try DurableQueue.inspect(store)
        }
    }

    /// Moves every damaged segment and dead letter to the quarantine table
    /// and brings the accounting identity back (records missing from the
    /// file are counted as dropped, reason `damaged`). Needs the queue
    /// opened for writing (the agent stopped). When SQLite reports damage in
    /// the file's own structure (``QueueVerification/fileProblems``),
    /// nothing is changed here: ``repair(_:logger:)`` rebuilds such a file
    /// first.
    public func repair() throws -> QueueRepair {
        try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            var repair = QueueRepair(found: try DurableQueue.inspect(store))
            guard repair.found.fileProblems.isEmpty else { return repair }
            var forgotten: [QueueStore.GatewayMemoryDamage] = []
            for damage in repair.found.damage {
                switch damage.place {
                case .segment(let id): try quarantine(segment: id, problem: damage.problem, &state)
                case .deadLetter(let number): try quarantine(deadLetter: number, problem: damage.problem, &state)
                case .gatewayMemory(let table, let key):
                    forgotten.append(.init(table: table, key: key, problem: damage.problem))
                    continue
                }
                repair.quarantined.append(damage)
            }
            if !forgotten.isEmpty {
                let now = wallClockMilliseconds()
                try store.db.transaction {
                    for damage in forgotten { try store.forget(damage) }
                    try store.setMeta(DurableQueue.gatewayMemoryForgottenKey, now)
                }
                state.gatewayMemoryForgottenAt = now
                repair.gatewayMemoryForgotten = forgotten.count
                logger.error(
                    "Damaged rows of the gateway's received ids or sessions were deleted: batches received before may be stored again if re-sent",
                    metadata: [
                        "queue.path": "\(configuration.location)",
                        "rows": "\(forgotten.count)",
                    ]
                )
            }
            repair.gatewayMemoryForgottenAt = try store.meta(DurableQueue.gatewayMemoryForgottenKey)
            let gap = try DurableQueue.accountingGap(store)
            if gap != 0 {
                try store.db.transaction {
                    if gap > 0 {
                        try store.add(counter: "dropped." + DropReason.damaged.name, gap)
                    } else {
                        try store.add(counter: "appended_total", -gap)
                    }
                }
                if gap > 0 {
                    state.counters["dropped." + DropReason.damaged.name, default: 0] += gap
                } else {
                    state.counters["appended_total", default: 0] -= gap
                }
                repair.accountingCorrection = gap
                logger.error(
                    "The queue's counters did not match its contents; corrected",
                    metadata: [
                        "queue.path": "\(configuration.location)",
                        "records.missing": "\(gap)",
                    ]
                )
            }
            return repair
        }
    }

    /// Whether the file has no `appended_total` (its counters were lost).
    func lostItsCounters() -> Bool {
        state.withLock { $0.counters["appended_total"] == nil }
    }

    /// Raises each accounting counter to what `lastKnown` says, where the
    /// file's is lower (it lost them): ``repair()`` then counts what the
    /// file no longer holds as dropped (damaged).
    package func restoreLostCounters(from lastKnown: QueueStatistics) throws {
        var wanted: [String: Int64] = [
            "appended_total": lastKnown.appendedTotal,
            "acknowledged_total": lastKnown.acknowledgedTotal,
            "dead_lettered_total": lastKnown.deadLetterRecords,
            "quarantined_total": lastKnown.quarantinedRecords,
        ]
        for (reason, count) in lastKnown.droppedByReason { wanted["dropped." + reason] = count }
        try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            let stored = try store.counters()
            try store.db.transaction {
                for (name, value) in wanted where value > stored[name] ?? 0 {
                    try store.add(counter: name, value - (stored[name] ?? 0))
                    state.counters[name] = value
                }
            }
        }
        logger.error(
            "The queue file's counters were lost with the damage; restored from the last known numbers",
            metadata: [
                "queue.path": "\(configuration.location)",
                "appended_total": "\(lastKnown.appendedTotal)",
            ]
        )
    }

    /// Quarantines one damaged segment and takes its records out of the
    /// queue's numbers; logs it once, with where it was.
    func quarantine(segment id: Int64, problem: String, _ state: inout State) throws {
        let store = try state.openStore(configuration.location.description)
        var sinks = SinkChange()
        let (records, bytes) = try store.db.transactionIfNeeded {
            try sinks.lose(segment: id, reason: "quarantined", store)
            try sinks.write(store)
            return try store.quarantine(segment: id, problem: problem, at: wallClockMilliseconds())
        }
        sinks.apply(&state)
        state.queuedRecords -= records
        state.queuedBytes -= bytes
        state.counters["quarantined_total", default: 0] += records
        state.oldestEnqueuedAt = try store.oldestEnqueuedAt()
        DurableQueue.logQuarantined(.segment(id), records: records, problem: problem, in: configuration, logger)
    }

    /// Quarantines one damaged dead letter (it is never replayed); logs it once.
    func quarantine(deadLetter number: Int64, problem: String, _ state: inout State) throws {
        let store = try state.openStore(configuration.location.description)
        try store.quarantine(deadLetter: number, problem: problem, at: wallClockMilliseconds())
        state.counters[state.sinks.everSeveral ? "appended_total" : "dead_lettered_total", default: 0] +=
            state.sinks.everSeveral ? 1 : -1
        state.counters["quarantined_total", default: 0] += 1
        DurableQueue.logQuarantined(.deadLetter(number), records: 1, problem: problem, in: configuration, logger)
    }

    /// The one error line a quarantined row gets: where it was, never its contents.
    static func logQuarantined(
        _ place: QueueVerification.Damage.Place,
        records: Int64,
        problem: String,
        in configuration: QueueConfiguration,
        _ logger: Logger
    ) {
        let damage = QueueVerification.Damage(place: place, records: records, problem: problem)
        logger.error(
            "A damaged \(damage.location) of the queue was quarantined; its records will not be sent",
            metadata: [
                "queue.path": "\(configuration.location)",
                "queue.row": "\(damage.location)",
                "records": "\(records)",
                "problem": "\(problem)",
            ]
        )
    }

    private static func inspect(_ store: QueueStore) throws -> QueueVerification {
        var report = QueueVerification()
        do {
            let check = try store.db.prepare("PRAGMA quick_check(20)")
            while try check.step() {
                if check.string(0) != "ok" { report.fileProblems.append(check.string(0)) }
            }
            try store.scanSegments { row in
                report.segmentsChecked += 1
                report.recordsChecked += row.pendingRecords
                if !row.hasChecksum { report.segmentsWithoutChecksum += 1 }
                if let problem = row.damage {
                    report.damage.append(.init(place: .segment(row.id), records: row.pendingRecords, problem: problem))
                }
                return true
            }
            try store.scanDeadLetters { number, problem in
                report.deadLettersChecked += 1
                if let problem {
                    report.damage.append(.init(place: .deadLetter(number), records: 1, problem: problem))
                }
            }
            try store.scanGatewayMemory { damage in
                report.gatewayMemoryRowsChecked += 1
                if let damage {
                    report.damage.append(
                        .init(
                            place: .gatewayMemory(table: damage.table, key: damage.key),
                            records: 0,
                            problem: damage.problem
                        )
                    )
                }
            }
            report.quarantinedRecords = try store.counters()["quarantined_total"] ?? 0
            report.accountingGap = try accountingGap(store)
        } catch let error as EdgeIngestError where error.code == .queueCorrupt {
            report.fileProblems.append(error.message)
        }
        return report
    }

    /// appended − (queued + acknowledged + dead letters + quarantined + dropped).
    private static func accountingGap(_ store: QueueStore) throws -> Int64 {
        let counters = try store.counters()
        let queued = try store.totals().records
        let dropped = counters.filter { $0.key.hasPrefix("dropped.") }.values.reduce(0, +)
        let out =
            queued + (counters["acknowledged_total"] ?? 0) + (counters["dead_lettered_total"] ?? 0)
            + (counters["quarantined_total"] ?? 0) + dropped
        return (counters["appended_total"] ?? 0) - out
    }
}
