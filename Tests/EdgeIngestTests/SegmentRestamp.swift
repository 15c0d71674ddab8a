import Foundation
import TestSupport

@testable import EdgeIngestCore

/// Gives segment `segment` (an SQL expression; every segment by
/// default) another acceptance, with a checksum to match, as a writer
/// in that boot and clock state would have stored it.
func restampSegments(
    _ path: String,
    segment: String = "id",
    boot: Int64,
    boottime: Int64,
    clock: Int64?
) throws {
    let rows = try sqlite3(
        path,
        "SELECT id, type, schema_version, enqueued_at, record_count, payload_bytes, codec, hex(ids), hex(payload) FROM segments WHERE id = \(segment);"
    )
    for row in rows.split(separator: "\n") {
        let c = row.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        let acceptance = Acceptance(boot: boot, boottime: boottime, clock: clock)
        let ids = bytes(hex: c[7])
        let payload = bytes(hex: c[8])
        let checksum = ids.withUnsafeBytes { i in
            payload.withUnsafeBytes { p in
                SegmentChecksum.of(
                    type: c[1],
                    schemaVersion: Int64(c[2])!,
                    enqueuedAt: Int64(c[3])!,
                    recordCount: Int64(c[4])!,
                    payloadBytes: Int64(c[5])!,
                    codec: Int64(c[6])!,
                    acceptance: acceptance,
                    ids: i,
                    payload: p
                )
            }
        }
        _ = try sqlite3(
            path,
            "UPDATE segments SET boot = \(boot), accepted_boottime = \(boottime), clock = \(clock.map(String.init) ?? "NULL"), checksum = \(checksum) WHERE id = \(c[0]);"
        )
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
