/// Records encoded for the queue, grouped into runs of one type, in input
/// order. Built outside the queue's lock.
struct EncodedBatch {
    struct Run {
        var typeName: String
        /// 12 bytes per record.
        var ids: [UInt8]
        /// One JSON line per record, each ending in "\n".
        var payload: [UInt8]
        /// End offset (after the newline) of each record in `payload`.
        var ends: [Int]

        var count: Int { ends.count }

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

    var runs: [Run] = []
    private init() {}
    var count: Int { runs.reduce(0) { $0 + $1.count } }

    /// Size of each record with its newline, in order.
    var recordSizes: [Int] {
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
    init(records: [Record], types: [String: RecordType], queueName: String) throws {
        var lastChecked: RecordType.Identity?
        var start = 0
        while start < records.count {
            // One run per stretch of records of one type, sized for that stretch.
            let name = records[start].type.name
            var end = start + 1
            while end < records.count, records[end].type.name == name { end += 1 }
            var run = Run(typeName: name, ids: [], payload: [], ends: [])
            run.payload.reserveCapacity(160 * (end - start))
            run.ids.reserveCapacity(12 * (end - start))
            run.ends.reserveCapacity(end - start)
            for record in records[start..<end] {
                if record.type.identity !== lastChecked {
                    try EncodedBatch.check(record.type, against: types, queueName: queueName)
                    lastChecked = record.type.identity
                }
                record.encodeJSON(into: &run.payload)
                run.payload.append(UInt8(ascii: "\n"))
                run.ends.append(run.payload.count)
                record.id.appendBytes(to: &run.ids)
            }
            runs.append(run)
            start = end
        }
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
    func slice(_ from: Int, _ to: Int) -> [Run] {
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

    /// Indices (over the whole batch) of the records whose id `test` picks;
    /// `test` gets a run's ids and the byte offset of one id.
    func indices(where test: (UnsafeRawBufferPointer, Int) throws -> Bool) throws -> [Int] {
        var picked: [Int] = []
        var base = 0
        for run in runs {
            try run.ids.withUnsafeBytes { ids in
                for i in 0..<run.count where try test(ids, i * 12) { picked.append(base + i) }
            }
            base += run.count
        }
        return picked
    }

    /// This batch without the records at `indices` (ascending, over the whole batch).
    func removing(_ indices: [Int]) -> EncodedBatch {
        var out = EncodedBatch()
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
            if kept.count > 0 { out.runs.append(kept) }
            base += run.count
        }
        return out
    }
}
