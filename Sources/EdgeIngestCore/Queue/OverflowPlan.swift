/// The pure decision of what an append does when the queue is bounded:
/// accept everything, wait, drop from the incoming batch, or drop stored
/// segments. No I/O; tested with tables.
struct OverflowPlan: Equatable {
    /// Number of incoming records to store: the range `acceptFrom..<acceptTo`.
    var acceptFrom: Int
    var acceptTo: Int
    /// Stored segments to delete first, oldest first.
    var dropSegments: [Int64]
    /// Records in `dropSegments` (after their consumed prefix).
    var droppedStoredRecords: Int64
    /// Bytes in `dropSegments` (after their consumed prefix).
    var droppedStoredBytes: Int64
    /// Incoming records refused.
    var droppedIncoming: Int
    /// True when the producer must wait for space (``OverflowPolicy/block``).
    var mustWait: Bool

    struct Limits: Equatable {
        var maxRecords: Int64?
        var maxBytes: Int64?

        func fits(records: Int64, bytes: Int64) -> Bool {
            (maxRecords.map { records <= $0 } ?? true) && (maxBytes.map { bytes <= $0 } ?? true)
        }
    }

    struct StoredSegment: Equatable {
        var id: Int64
        var records: Int64
        var bytes: Int64
        var type = ""
    }

    /// `segments` (oldest first) in the order `drop_oldest` deletes them
    /// when types have shares (``TypeDelivery/share``): first what no
    /// share protects — segments of types without one, and of a type the
    /// oldest of what it holds beyond its share — oldest first; then, as a
    /// last resort, the protected rest, oldest first. `reserved` is each
    /// type's share in bytes.
    static func dropOrder(_ segments: [StoredSegment], reserved: [String: Int64]) -> [StoredSegment] {
        guard !reserved.isEmpty else { return segments }
        var held: [String: Int64] = [:]
        for segment in segments { held[segment.type, default: 0] += segment.bytes }
        var first: [StoredSegment] = []
        var protected: [StoredSegment] = []
        for segment in segments {
            if let share = reserved[segment.type], held[segment.type, default: 0] <= share {
                protected.append(segment)
            } else {
                first.append(segment)
                held[segment.type, default: 0] -= segment.bytes
            }
        }
        return first + protected
    }

    /// - Parameters:
    ///   - incomingBytes: encoded size of each incoming record (with its newline).
    ///   - droppable: stored segments that may be deleted, oldest first
    ///     (never ones under an outstanding lease). Only read for dropOldest.
    static func make(
        policy: OverflowPolicy,
        limits: Limits,
        queuedRecords: Int64,
        queuedBytes: Int64,
        incomingBytes: [Int],
        droppable: () throws -> [StoredSegment]
    ) rethrows -> OverflowPlan {
        let n = incomingBytes.count
        let total = incomingBytes.reduce(Int64(0)) { $0 + Int64($1) }
        var plan = OverflowPlan(
            acceptFrom: 0,
            acceptTo: n,
            dropSegments: [],
            droppedStoredRecords: 0,
            droppedStoredBytes: 0,
            droppedIncoming: 0,
            mustWait: false
        )
        if limits.fits(records: queuedRecords + Int64(n), bytes: queuedBytes + total) { return plan }
        switch policy.kind {
        case .block:
            plan.mustWait = true
        case .dropNewest:
            var records = queuedRecords
            var bytes = queuedBytes
            var k = 0
            while k < n, limits.fits(records: records + 1, bytes: bytes + Int64(incomingBytes[k])) {
                records += 1
                bytes += Int64(incomingBytes[k])
                k += 1
            }
            plan.acceptTo = k
            plan.droppedIncoming = n - k
        case .dropOldest:
            var records = queuedRecords
            var bytes = queuedBytes
            for segment in try droppable() {
                if limits.fits(records: records + Int64(n), bytes: bytes + total) { break }
                plan.dropSegments.append(segment.id)
                plan.droppedStoredRecords += segment.records
                plan.droppedStoredBytes += segment.bytes
                records -= segment.records
                bytes -= segment.bytes
            }
            // Still too big (the batch alone exceeds the bound, or the rest
            // is being uploaded): keep the newest incoming records that fit.
            var start = 0
            var incomingTotal = total
            while start < n, !limits.fits(records: records + Int64(n - start), bytes: bytes + incomingTotal) {
                incomingTotal -= Int64(incomingBytes[start])
                start += 1
            }
            plan.acceptFrom = start
            plan.droppedIncoming = start
        }
        return plan
    }
}
