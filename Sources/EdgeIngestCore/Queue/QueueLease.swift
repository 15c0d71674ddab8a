/// The oldest records of a queue, taken for upload. Nothing is deleted until
/// the lease is acknowledged with ``DurableQueue/acknowledge(_:count:)``;
/// ``DurableQueue/release(_:)`` gives it back unchanged.
///
/// ```swift
/// while let lease = try queue.take(maxRecords: 1000, maxBytes: 1 << 20) {
///     try await post(lease.payload, idempotencyKey: lease.id)
///     try queue.acknowledge(lease)
/// }
/// ```
public struct QueueLease: Sendable {
    /// A run of records of one type, schema version and append time.
    public struct Segment: Sendable, Hashable {
        public var type: String
        public var schemaVersion: Int64
        /// When the records were appended (ms since the epoch).
        public var enqueuedAt: Int64
        public var recordCount: Int
    }

    /// Where the lease's records live, for acknowledgement.
    struct Part: Sendable, Hashable {
        var segmentID: Int64
        var segmentRecordCount: Int64
        /// The record range of the segment, and its byte offsets in the segment payload.
        var fromRecord: Int64
        var toRecord: Int64
        var fromByte: Int64
        /// Bytes of acceptance fields put into each of its records
        /// (``AcceptanceStamping``): not stored, so not consumed.
        var addedBytesPerRecord = 0
    }

    /// Stable for the same records across retries and restarts: the first
    /// record's `_id` and the record count. Use it as an idempotency key.
    public let id: String
    /// The records as NDJSON: one JSON object per line.
    public let payload: [UInt8]
    /// Each record's `_id`, in order.
    public let recordIDs: [ObjectId]
    /// End offset of each record's line (after its newline) in ``payload``.
    public let recordEnds: [Int]
    /// The runs of records by type, in order.
    public let segments: [Segment]

    let parts: [Part]
    let serial: UInt64
    /// The sink's id in the queue file (0 with one sink).
    let sink: Int
    /// The sink the records were taken for (``QueueRouting/Sink/name``).
    public let sinkName: String

    /// Number of records.
    public var recordCount: Int { recordIDs.count }

    /// The stored bytes of `count` records of part `part`, whose first record
    /// is the lease's record `offset` (the acceptance fields the lease
    /// added are not stored, so not counted).
    func storedBytes(of part: Part, records count: Int64, from offset: Int) -> Int64 {
        let start = offset == 0 ? 0 : recordEnds[offset - 1]
        return Int64(recordEnds[offset + Int(count) - 1] - start - Int(count) * part.addedBytesPerRecord)
    }

    /// The bytes the queue stored for the whole lease (its ``payload``
    /// without the acceptance fields the lease added).
    var storedByteCount: Int64 {
        var added = 0
        for (k, segment) in segments.enumerated() { added += segment.recordCount * parts[k].addedBytesPerRecord }
        return Int64(payload.count - added)
    }

    /// The segment (type, schema version, append time) of record `index`.
    public func segment(containing index: Int) -> Segment {
        var base = 0
        for segment in segments {
            if index < base + segment.recordCount { return segment }
            base += segment.recordCount
        }
        return segments[segments.count - 1]
    }

    /// The NDJSON lines of records `range`, with their newlines.
    public func payload(records range: Range<Int>) -> ArraySlice<UInt8> {
        let start = range.lowerBound == 0 ? 0 : recordEnds[range.lowerBound - 1]
        return payload[start..<recordEnds[range.upperBound - 1]]
    }

    /// The JSON of record `index`, without its newline.
    public func recordJSON(at index: Int) -> ArraySlice<UInt8> {
        let start = index == 0 ? 0 : recordEnds[index - 1]
        return payload[start..<(recordEnds[index] - 1)]
    }

    /// The JSON of record `index` as the queue stores it: without the
    /// acceptance fields the lease added (what a dead letter keeps, so a
    /// replay is stamped anew and not twice).
    func storedRecordJSON(at index: Int) -> [UInt8] {
        let json = recordJSON(at: index)
        var base = 0
        for (k, segment) in segments.enumerated() {
            if index < base + segment.recordCount {
                let added = parts[k].addedBytesPerRecord
                guard added > 0, let open = json.first else { break }
                return [open] + json.dropFirst(1 + added)
            }
            base += segment.recordCount
        }
        return Array(json)
    }
}
