import Foundation
import TestSupport

@testable import EdgeIngestCore

/// What the checksum of a stored segment covers besides its ids and
/// payload: what a test changes to make a row another writer's.
struct StoredSegmentHeader {
    var type: String
    var schemaVersion: Int64
    var enqueuedAt: Int64
    var recordCount: Int64
    var payloadBytes: Int64
    var codec: Int64
    var acceptance: Acceptance?
}

/// Changes segment `segment` (an SQL expression; every segment by default)
/// with `change` and gives it the checksum to match, as a writer storing
/// that row would have: the row is another version's or another boot's,
/// not damage.
func rewriteSegments(
    _ path: String,
    segment: String = "id",
    _ change: (inout StoredSegmentHeader) -> Void
) throws {
    let rows = try sqlite3(
        path,
        """
        SELECT id, type, schema_version, enqueued_at, record_count, payload_bytes, codec, hex(ids), hex(payload),
            coalesce(boot, ''), coalesce(accepted_boottime, ''), coalesce(clock, '') FROM segments WHERE id = \(segment);
        """
    )
    for row in rows.split(separator: "\n") {
        let c = row.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        var header = StoredSegmentHeader(
            type: c[1],
            schemaVersion: Int64(c[2])!,
            enqueuedAt: Int64(c[3])!,
            recordCount: Int64(c[4])!,
            payloadBytes: Int64(c[5])!,
            codec: Int64(c[6])!,
            acceptance: Int64(c[9]).map { Acceptance(boot: $0, boottime: Int64(c[10])!, clock: Int64(c[11])) }
        )
        change(&header)
        let ids = bytes(hex: c[7])
        let payload = bytes(hex: c[8])
        let checksum = ids.withUnsafeBytes { i in
            payload.withUnsafeBytes { p in
                SegmentChecksum.of(
                    type: header.type,
                    schemaVersion: header.schemaVersion,
                    enqueuedAt: header.enqueuedAt,
                    recordCount: header.recordCount,
                    payloadBytes: header.payloadBytes,
                    codec: header.codec,
                    acceptance: header.acceptance,
                    ids: i,
                    payload: p
                )
            }
        }
        let a = header.acceptance
        func sql(_ value: Int64?) -> String { value.map(String.init) ?? "NULL" }
        _ = try sqlite3(
            path,
            """
            UPDATE segments SET codec = \(header.codec), boot = \(sql(a?.boot)), accepted_boottime = \(sql(a?.boottime)),
                clock = \(sql(a?.clock)), checksum = \(checksum) WHERE id = \(c[0]);
            """
        )
    }
}

/// Gives segment `segment` another acceptance (``rewriteSegments(_:segment:_:)``),
/// as a writer in that boot and clock state would have stored it.
func restampSegments(
    _ path: String,
    segment: String = "id",
    boot: Int64,
    boottime: Int64,
    clock: Int64?
) throws {
    try rewriteSegments(path, segment: segment) {
        $0.acceptance = Acceptance(boot: boot, boottime: boottime, clock: clock)
    }
}

private func bytes(hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        out.append(UInt8(hex[index..<next], radix: 16)!)
        index = next
    }
    return out
}
