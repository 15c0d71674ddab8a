/// A record the backend refused one by one, kept with the reason.
public struct DeadLetter: Sendable, Hashable {
    /// The row's number in the dead-letter table.
    public var number: Int64
    public var recordID: ObjectId
    public var type: String
    public var schemaVersion: Int64
    /// When the record was appended (ms since the epoch).
    public var enqueuedAt: Int64
    /// When it was refused (ms since the epoch).
    public var failedAt: Int64
    public var reason: String
    /// The record as it was sent (one JSON object).
    public var payload: [UInt8]
    /// The sink that refused it (``QueueRouting/Sink/name``); nil for a
    /// sink the queue no longer has.
    public var sink: String?
    /// The sink's id in the file (0: the default sink).
    var sinkID: Int = 0
}

extension DurableQueue {
    /// The dead letters, oldest first (at most `limit`).
    public func deadLetters(limit: Int = .max) throws -> [DeadLetter] {
        try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            let stmt = try store.db.prepare(
                "SELECT id, record_id, type, schema_version, enqueued_at, failed_at, reason, payload, coalesce(sink, 0) FROM dead_letters ORDER BY id LIMIT ?1"
            )
            stmt.bind(1, Int64(min(limit, Int(Int64.max))))
            var out: [DeadLetter] = []
            let names = Dictionary(state.sinks.ids.map { ($0.value, $0.key) }, uniquingKeysWith: { a, _ in a })
            while try stmt.step() {
                let sink = Int(stmt.int64(8))
                out.append(
                    DeadLetter(
                        number: stmt.int64(0),
                        recordID: ObjectId(unsafeBytes: stmt.blob(1)),
                        type: stmt.string(2),
                        schemaVersion: stmt.int64(3),
                        enqueuedAt: stmt.int64(4),
                        failedAt: stmt.int64(5),
                        reason: stmt.string(6),
                        payload: try store.openDeadLetterPayload(stmt.blob(7), number: stmt.int64(0)),
                        sink: state.sinks.isSingle
                            ? (sink == 0 ? QueueRouting.defaultSinkName : nil) : names[sink],
                        sinkID: sink
                    )
                )
            }
            return out
        }
    }

    /// Moves dead letters back into the queue (with their own `_id`s, so a
    /// deduplicating backend still stores each once), in one transaction.
    /// With several sinks, each goes back to the sink that refused it (or,
    /// if that sink is gone, to the sinks its type is routed to now) and is
    /// counted as routed again, not taken off the queue's dead-letter count.
    ///
    /// - Parameter numbers: the dead letters to replay; nil replays all.
    /// - Returns: how many were replayed.
    @discardableResult
    ///
    /// A dead letter whose checksum does not match is not replayed: it is
    /// moved to the quarantine table and logged.
    public func replayDeadLetters(_ numbers: Set<Int64>? = nil) throws -> Int {
        let damaged = try quarantineDamagedDeadLetters()
        let letters = try deadLetters().filter {
            (numbers?.contains($0.number) ?? true) && !damaged.contains($0.number)
        }
        guard !letters.isEmpty else { return 0 }
        for letter in letters where typesByName[letter.type] == nil {
            throw EdgeIngestError(
                .unknownObjectType,
                "Dead letter \(letter.number) is of type '\(letter.type)', which this queue no longer accepts: declare the type again to replay it."
            )
        }
        try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            let now = wallClockMilliseconds()
            var bytes: Int64 = 0
            let several = !state.sinks.isSingle
            // A file that had several sinks counted a letter's record by its
            // last sink: a replay is a new arrival, not a dead letter undone.
            let asArrival = state.sinks.everSeveral
            var sinks = SinkChange()
            try store.db.transaction {
                let delete = try store.db.prepare("DELETE FROM dead_letters WHERE id = ?1")
                for letter in letters {
                    var run = EncodedBatch.Run(typeName: letter.type, ids: [], payload: letter.payload, ends: [])
                    run.payload.append(UInt8(ascii: "\n"))
                    run.ends = [run.payload.count]
                    letter.recordID.appendBytes(to: &run.ids)
                    if several, state.sinks.byID[letter.sinkID] != nil {
                        let mask = SinkTable.bit(letter.sinkID)
                        try store.insert(
                            run,
                            schemaVersion: letter.schemaVersion,
                            enqueuedAt: now,
                            sinks: .some(SinkTable.stored(mask))
                        )
                        sinks.route(run, only: letter.sinkID, store)
                    } else {
                        try store.insert(run, schemaVersion: letter.schemaVersion, enqueuedAt: now)
                        sinks.route(run, store)
                    }
                    bytes += Int64(run.payload.count)
                    delete.bind(1, letter.number)
                    try delete.run()
                }
                // One sink: the record left as a dead letter and comes back.
                let moved = asArrival ? "appended_total" : "dead_lettered_total"
                try store.add(counter: moved, asArrival ? Int64(letters.count) : -Int64(letters.count))
                try store.add(counter: "dead_letter_replayed_total", Int64(letters.count))
                try sinks.write(store)
            }
            sinks.apply(&state)
            state.queuedRecords += Int64(letters.count)
            state.queuedBytes += bytes
            if asArrival {
                state.counters["appended_total", default: 0] += Int64(letters.count)
            } else {
                state.counters["dead_lettered_total", default: 0] -= Int64(letters.count)
            }
            state.counters["dead_letter_replayed_total", default: 0] += Int64(letters.count)
            if state.oldestEnqueuedAt == nil { state.oldestEnqueuedAt = now }
        }
        return letters.count
    }

    /// Moves dead letters that fail their checksum to the quarantine table;
    /// returns their numbers.
    private func quarantineDamagedDeadLetters() throws -> Set<Int64> {
        try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            var damaged: [(Int64, String)] = []
            try store.scanDeadLetters { number, problem in
                if let problem { damaged.append((number, problem)) }
            }
            for (number, problem) in damaged { try quarantine(deadLetter: number, problem: problem, &state) }
            return Set(damaged.map(\.0))
        }
    }
}

extension DurableQueue {
    /// The `count` newest dead letters' numbers by record `_id` (for the
    /// letters an acknowledgement just added).
    func newestDeadLetterNumbers(count: Int) throws -> [ObjectId: Int64] {
        try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            let stmt = try store.db.prepare("SELECT id, record_id FROM dead_letters ORDER BY id DESC LIMIT ?1")
            stmt.bind(1, Int64(count))
            var out: [ObjectId: Int64] = [:]
            while try stmt.step() {
                let id = ObjectId(unsafeBytes: stmt.blob(1))
                if out[id] == nil { out[id] = stmt.int64(0) }  // the newest first
            }
            return out
        }
    }
}

extension DurableQueue {
    /// Deletes the dead letters numbered `numbers` (nil: every one) in one
    /// transaction; returns how many. Their records are gone for good.
    @discardableResult
    public func discardDeadLetters(_ numbers: Set<Int64>?) throws -> Int {
        guard let numbers else { return try purgeDeadLetters() }
        return try state.withLock { state in
            let store = try state.openStore(configuration.location.description)
            return try store.db.transaction {
                let delete = try store.db.prepare("DELETE FROM dead_letters WHERE id = ?1")
                var deleted = 0
                for number in numbers.sorted() {
                    delete.bind(1, number)
                    try delete.run()
                    deleted += store.db.changes
                }
                return deleted
            }
        }
    }
}
