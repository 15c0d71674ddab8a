/// Validated records encoded for the queue (one JSON line each), grouped
/// into runs of one type, in input order. Filled outside the queue's lock,
/// by ``RecordBuilder/finish(into:)`` without a ``Record`` per reading, and
/// appended in one transaction by ``DurableQueue/append(_:positions:counters:onWaitForSpace:)-(EncodedBatch,_,_,_)``.
///
/// ```swift
/// var batch = EncodedBatch()
/// var builder = RecordBuilder(type: sensor)
/// try builder.set(field: 0, "WX1278UIT")
/// try builder.finish(into: &batch)
/// try await queue.append(batch)
/// ```
public struct EncodedBatch: Sendable {
    package struct Run: Sendable {
        package var typeName: String
        /// 12 bytes per record.
        package var ids: [UInt8]
        /// One JSON line per record, each ending in "\n".
        package var payload: [UInt8]
        /// End offset (after the newline) of each record in `payload`.
        package var ends: [Int]

        package init(typeName: String, ids: [UInt8], payload: [UInt8], ends: [Int]) {
            self.typeName = typeName
            self.ids = ids
            self.payload = payload
            self.ends = ends
        }

        package var count: Int { ends.count }

        /// Records `from..<to` of this run as a new run.
        func slice(_ from: Int, _ to: Int) -> Run {
            let start = from == 0 ? 0 : ends[from - 1]
            let end = ends[to - 1]
            return Run(
                typeName: typeName,
                ids: Array(ids[from * 12..<to * 12]),
                payload: Array(payload[start..<end]),
                ends: ends[from..<to].map { $0 - start }
            )
        }
    }

    package var runs: [Run] = []
    /// Each declaration records were encoded with, once: the queue checks
    /// them against its own object types before storing.
    private var encodedTypes: [RecordType] = []

    /// Records the first run reserves room for (later runs grow as they
    /// go: with alternating types each record starts a run, and a
    /// commit's worth reserved per run cost megabytes per commit).
    private var expectedRecords = 0
    /// Bytes a record is expected to take, its newline included.
    private var expectedRecordBytes = 160

    /// An empty batch.
    ///
    /// - Parameters:
    ///   - expectedRecords: how many records it will likely hold (a
    ///     commit's worth), so its buffers are allocated once.
    ///   - expectedRecordBytes: how long a record will likely be (the
    ///     last batch's ``nextExpectedRecordBytes``), clamped to 64–1,024:
    ///     a guess too small makes the buffer double (and copy) near the
    ///     end of a commit, holding twice the room it needs.
    public init(expectedRecords: Int = 0, expectedRecordBytes: Int = 160) {
        self.expectedRecords = expectedRecords
        self.expectedRecordBytes = min(max(expectedRecordBytes, 64), 1024)
    }

    /// What the next batch of records like these should expect one to
    /// take: this batch's average (newline included) and 3 % for the
    /// spread; nil when it is empty.
    ///
    /// ```swift
    /// let next = EncodedBatch(expectedRecords: 4000, expectedRecordBytes: batch.nextExpectedRecordBytes ?? 160)
    /// ```
    public var nextExpectedRecordBytes: Int? {
        guard count > 0 else { return nil }
        let average = runs.reduce(0) { $0 + $1.payload.count } / count
        return average + average / 32 + 1
    }

    /// The number of records (kept, not summed: the agent asks after every line).
    public private(set) var count = 0

    /// Whether the batch has no records.
    public var isEmpty: Bool { runs.isEmpty }

    /// Size of each record with its newline, in order.
    package var recordSizes: [Int] {
        var sizes: [Int] = []
        sizes.reserveCapacity(count)
        for run in runs {
            var previous = 0
            for end in run.ends {
                sizes.append(end - previous)
                previous = end
            }
        }
        return sizes
    }

    /// Encodes `records`, refusing any whose type is not in `types`.
    package init(records: [Record], types: [String: RecordType], queueName: String) throws {
        expectedRecords = records.count
        for record in records { append(type: record.type, id: record.id, values: record.values) }
        try check(against: types, queueName: queueName)
    }

    /// Appends one validated record; fields with a span in `verbatim` are
    /// written as that text.
    mutating func append(type: RecordType, id: ObjectId, values: [FieldValue?], verbatim: VerbatimFields? = nil) {
        let last = runIndex(for: type)
        Record.encodeJSON(type: type, id: id, values: values, verbatim: verbatim, into: &runs[last].payload)
        endRecord(in: last, id: id)
    }

    /// Appends a line that is its record's JSON once `rewrites` (in line
    /// order) are applied: see ``ReadingRouter``'s as-read path.
    mutating func appendAsRead(
        type: RecordType,
        id: ObjectId,
        line: UnsafeRawBufferPointer,
        rewrites: [ReadingRouter.AsReadRewrite]
    ) {
        let last = runIndex(for: type)
        if rewrites.isEmpty {
            runs[last].payload.append(contentsOf: line)
        } else {
            var copied = 0
            for rewrite in rewrites {
                runs[last].payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: line[copied..<rewrite.start]))
                switch rewrite.replacement {
                case .value(let value): Record.appendValue(value, to: &runs[last].payload)
                case .generatedID(let id):
                    runs[last].payload.append(contentsOf: #"{"_id":"#.utf8)
                    Record.appendQuotedHex(id, to: &runs[last].payload)
                    runs[last].payload.append(UInt8(ascii: ","))
                }
                copied = rewrite.end
            }
            runs[last].payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: line[copied...]))
        }
        endRecord(in: last, id: id)
    }

    /// The run a record of `type` goes into: the last one, or a new one.
    private mutating func runIndex(for type: RecordType) -> Int {
        if encodedTypes.last?.storage !== type.storage, !encodedTypes.contains(where: { $0.storage === type.storage }) {
            encodedTypes.append(type)
        }
        if runs.isEmpty || runs[runs.count - 1].typeName != type.name {
            var run = Run(typeName: type.name, ids: [], payload: [], ends: [])
            if runs.isEmpty {
                run.payload.reserveCapacity(expectedRecordBytes * expectedRecords)
                run.ids.reserveCapacity(12 * expectedRecords)
                run.ends.reserveCapacity(expectedRecords)
            }
            runs.append(run)
        }
        return runs.count - 1
    }

    private mutating func endRecord(in run: Int, id: ObjectId) {
        runs[run].payload.append(UInt8(ascii: "\n"))
        runs[run].ends.append(runs[run].payload.count)
        id.appendBytes(to: &runs[run].ids)
        count += 1
    }

    /// Refuses the batch if a record's type is not one of `types` (the queue's).
    package func check(against types: [String: RecordType], queueName: String) throws {
        for type in encodedTypes { try EncodedBatch.check(type, against: types, queueName: queueName) }
    }

    private static func check(_ type: RecordType, against types: [String: RecordType], queueName: String) throws {
        guard let declared = types[type.name] else {
            throw EdgeIngestError(
                .unknownObjectType,
                "Record type '\(type.name)' is not among the object types of the queue \(queueName) (\(types.keys.sorted().joined(separator: ", "))). Add it to the configuration's object types."
            )
        }
        guard declared == type else {
            throw EdgeIngestError(
                .unknownObjectType,
                "Record type '\(type.name)' was validated against a declaration that differs from the queue's: validate readings with the queue's object types."
            )
        }
    }

    /// The records `from..<to` (indices over the whole batch).
    package func slice(_ from: Int, _ to: Int) -> [Run] {
        var out: [Run] = []
        var base = 0
        for run in runs {
            let lo = max(from, base) - base
            let hi = min(to, base + run.count) - base
            if lo < hi { out.append(lo == 0 && hi == run.count ? run : run.slice(lo, hi)) }
            base += run.count
        }
        return out
    }

    /// The `_id` of record `index` (over the whole batch).
    package func id(at index: Int) -> ObjectId {
        var base = 0
        for run in runs {
            if index < base + run.count {
                let offset = (index - base) * 12
                return run.ids.withUnsafeBytes {
                    ObjectId(unsafeBytes: UnsafeRawBufferPointer(rebasing: $0[offset..<offset + 12]))
                }
            }
            base += run.count
        }
        preconditionFailure("record \(index) of a batch of \(count)")
    }

    /// Calls `body` with record `index`'s JSON line (without its newline).
    package func withRecord<R>(at index: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        var base = 0
        for run in runs {
            if index < base + run.count {
                let i = index - base
                let start = i == 0 ? 0 : run.ends[i - 1]
                return try run.payload.withUnsafeBytes {
                    try body(UnsafeRawBufferPointer(rebasing: $0[start..<run.ends[i] - 1]))
                }
            }
            base += run.count
        }
        preconditionFailure("record \(index) of a batch of \(count)")
    }

    /// This batch without the records at `indices` (ascending, over the whole batch).
    package func removing(_ indices: [Int]) -> EncodedBatch {
        var out = EncodedBatch()
        out.encodedTypes = encodedTypes
        var next = 0
        var base = 0
        for run in runs {
            var kept = Run(typeName: run.typeName, ids: [], payload: [], ends: [])
            var start = 0
            for i in 0..<run.count {
                let end = run.ends[i]
                if next < indices.count, indices[next] == base + i {
                    next += 1
                } else {
                    kept.ids += run.ids[i * 12..<i * 12 + 12]
                    kept.payload += run.payload[start..<end]
                    kept.ends.append(kept.payload.count)
                }
                start = end
            }
            if kept.count > 0 {
                out.runs.append(kept)
                out.count += kept.count
            }
            base += run.count
        }
        return out
    }
}
