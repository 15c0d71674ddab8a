import CZlib

/// The checksum that lets the queue tell a stored row from a damaged one
/// (format 3, docs/QUEUE.md "Integrity").
///
/// CRC-32 as zlib computes it (the gzip polynomial): already linked,
/// portable to every CPU we ship for, and measured at 3.6–4.2 GB/s here —
/// about 0.05 CPU-seconds per million 172-byte readings for each pass
/// (written once, checked once when read; docs/BENCHMARKS.md). It covers
/// every field that decides what is sent: a flipped bit in the payload, an
/// `_id`, the type name, the schema version or the record count changes
/// it; so does, from format 4, a row's boot, boot-time clock and clock
/// state (they decide its corrected time). The consumed prefix (which changes with each acknowledgement) is
/// not covered; it is checked against the payload's line ends instead.
enum SegmentChecksum {
    /// The checksum of a segment row; `payload` as stored (sealed when the
    /// queue is encrypted).
    static func of(
        type: String,
        schemaVersion: Int64,
        enqueuedAt: Int64,
        recordCount: Int64,
        payloadBytes: Int64,
        codec: Int64,
        acceptance: Acceptance? = nil,
        ids: UnsafeRawBufferPointer,
        payload: UnsafeRawBufferPointer
    ) -> Int64 {
        var header: [UInt8] = []
        header.reserveCapacity(72 + type.utf8.count)
        for field in [schemaVersion, enqueuedAt, recordCount, payloadBytes, codec] {
            appendLittleEndian(field, to: &header)
        }
        // Format 4: when and in which boot (rows from before have none).
        if let acceptance {
            for field in [acceptance.boot, acceptance.boottime, acceptance.clock ?? -1] {
                appendLittleEndian(field, to: &header)
            }
        }
        header.append(contentsOf: type.utf8)
        var crc = header.withUnsafeBytes { update(0, $0) }
        crc = update(crc, ids)
        crc = update(crc, payload)
        return Int64(crc)
    }

    /// The checksum of a dead letter row; `payload` as stored.
    static func ofDeadLetter(
        recordID: UnsafeRawBufferPointer,
        type: String,
        schemaVersion: Int64,
        enqueuedAt: Int64,
        reason: String,
        payload: UnsafeRawBufferPointer
    ) -> Int64 {
        var header: [UInt8] = []
        appendLittleEndian(schemaVersion, to: &header)
        appendLittleEndian(enqueuedAt, to: &header)
        appendLittleEndian(Int64(type.utf8.count), to: &header)
        header.append(contentsOf: type.utf8)
        header.append(contentsOf: reason.utf8)
        var crc = header.withUnsafeBytes { update(0, $0) }
        crc = update(crc, recordID)
        crc = update(crc, payload)
        return Int64(crc)
    }

    /// The checksum of one received record's encoded line: how a gateway
    /// tells a re-send (same `_id`, same content) from a conflict.
    static func ofRecord(_ line: UnsafeRawBufferPointer) -> Int64 {
        Int64(update(0, line))
    }

    private static func appendLittleEndian(_ value: Int64, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    private static func update(_ crc: UInt, _ bytes: UnsafeRawBufferPointer) -> UInt {
        var crc = crc
        var rest = bytes
        // zlib takes a 32-bit length: feed large blobs in pieces.
        while !rest.isEmpty {
            let piece = min(rest.count, 1 << 30)
            crc = UInt(crc32(uLong(crc), rest.baseAddress!.assumingMemoryBound(to: Bytef.self), uInt(piece)))
            rest = UnsafeRawBufferPointer(rebasing: rest[piece...])
        }
        return crc
    }
}
