import Foundation
import TestSupport
import Testing

@testable import EdgeIngestCore

/// Compressed segments (queue format 3, codec 1): stored as one zstd frame
/// when that is smaller, read back byte for byte, mixed freely with plain
/// ones (either setting reads both), under encryption too (compressed,
/// then sealed), and a frame that is damaged is reported, never sent.
@Suite struct CompressedSegmentTests {
    func configuration(_ dir: TemporaryDirectory, _ compression: QueueCompression) throws -> QueueConfiguration {
        var configuration = try fileConfiguration(dir)
        configuration.compression = compression
        return configuration
    }

    /// `codec|stored bytes|payload_bytes` per segment, in order.
    func rows(_ dir: TemporaryDirectory) throws -> [String] {
        try sqlite3(dir.file("queue.sqlite"), "SELECT codec, length(payload), payload_bytes FROM segments ORDER BY id;")
            .split(separator: "\n").map(String.init)
    }

    @Test func bigSegmentsAreStoredCompressedAndReadBackExactly() async throws {
        let dir = try TemporaryDirectory()
        let records = try weatherRecords(1000)
        let single = try weatherRecords(1, start: 5000)
        do {
            let queue = try DurableQueue.open(try configuration(dir, .zstd))
            try await queue.append(records)
            try await queue.append(single)  // one reading: under 256 bytes, stored plain
            queue.close()
        }
        let stored = try rows(dir).map { $0.split(separator: "|").compactMap { Int($0) } }
        #expect(stored.count == 2)
        #expect(stored[0][0] == 1 && stored[0][1] * 5 < stored[0][2], "compressed at least 5×: \(stored[0])")
        #expect(stored[1][0] == 0 && stored[1][1] == stored[1][2])
        let queue = try DurableQueue.open(try configuration(dir, .zstd))
        #expect(try drain(queue, batch: 300) == (records + single).map(\.jsonString))
        #expect(try queue.verify().isIntact)
    }

    @Test(arguments: [(QueueCompression.none, QueueCompression.zstd), (.zstd, .none)])
    func eitherSettingReadsBothCodecs(_ first: QueueCompression, _ then: QueueCompression) async throws {
        let dir = try TemporaryDirectory()
        let a = try weatherRecords(500)
        let b = try weatherRecords(500, start: 500)
        do {
            let queue = try DurableQueue.open(try configuration(dir, first))
            try await queue.append(a)
            queue.close()
        }
        do {
            let queue = try DurableQueue.open(try configuration(dir, then))
            try await queue.append(b)
            queue.close()
        }
        let codecs = try rows(dir).map { $0.prefix(1) }
        #expect(codecs == [first == .zstd ? "1" : "0", then == .zstd ? "1" : "0"])
        let queue = try DurableQueue.open(try configuration(dir, then))
        #expect(try drain(queue, batch: 128) == (a + b).map(\.jsonString))
    }

    @Test func encryptedSegmentsAreCompressedThenSealed() async throws {
        let dir = try TemporaryDirectory()
        var configuration = try configuration(dir, .zstd)
        configuration.encryptionKey = EncryptionTests.key
        let records = try weatherRecords(1000, device: EncryptionTests.secret)
        do {
            let queue = try DurableQueue.open(configuration)
            try await queue.append(records)
            queue.close()
        }
        let stored = try rows(dir)[0].split(separator: "|").compactMap { Int($0) }
        #expect(stored[0] == 1 && stored[1] * 5 < stored[2], "\(stored)")
        let raw = try Data(contentsOf: URL(fileURLWithPath: dir.file("queue.sqlite")))
        #expect(raw.range(of: Data(EncryptionTests.secret.utf8)) == nil)
        let queue = try DurableQueue.open(configuration)
        #expect(try drain(queue) == records.map(\.jsonString))
    }

    /// One byte of a compressed payload changed: the checksum says so, the
    /// segment is quarantined whole, nothing of it is sent.
    @Test func aChangedByteInACompressedPayloadIsQuarantined() async throws {
        let dir = try TemporaryDirectory()
        let kept = try weatherRecords(400, start: 1000)
        do {
            let queue = try DurableQueue.open(try configuration(dir, .zstd))
            try await queue.append(try weatherRecords(400))
            try await queue.append(kept)
            queue.close()
        }
        _ = try sqlite3(
            dir.file("queue.sqlite"),
            "UPDATE segments SET payload = substr(payload, 1, 30) || (CASE WHEN substr(payload, 31, 1) = x'00' THEN x'01' ELSE x'00' END) || substr(payload, 32) WHERE id = 1;"
        )
        let queue = try DurableQueue.open(try configuration(dir, .zstd))
        #expect(try queue.verify().damage.map(\.location) == ["segment 1"])
        #expect(try drain(queue) == kept.map(\.jsonString))
        #expect(try queue.statistics().quarantinedRecords == 400)
        // The quarantined row says how its payload is stored, for whoever examines it.
        let problem = try sqlite3(dir.file("queue.sqlite"), "SELECT problem FROM quarantine;")
        #expect(problem.contains("checksum") && problem.contains("(payload kept as stored, codec 1)"), "\(problem)")
    }

    /// A codec set on a row without a checksum (no writer does that) or a
    /// codec no version writes is a damaged row — quarantined — not a
    /// newer format that would stop the whole queue.
    @Test(arguments: ["codec = 2, checksum = NULL", "codec = 3185011036"])
    func aCodecNoWriterSetsIsDamage(_ change: String) async throws {
        let dir = try TemporaryDirectory()
        let kept = try weatherRecords(300, start: 1000)
        do {
            let queue = try DurableQueue.open(try configuration(dir, .zstd))
            try await queue.append(try weatherRecords(300))
            try await queue.append(kept)
            queue.close()
        }
        _ = try sqlite3(dir.file("queue.sqlite"), "UPDATE segments SET \(change) WHERE id = 1;")
        let queue = try DurableQueue.open(try configuration(dir, .zstd))
        #expect(try queue.verify().damage.map(\.location) == ["segment 1"])
        #expect(try drain(queue) == kept.map(\.jsonString))
    }

    /// A codec a newer version writes (a small number, with a checksum) is
    /// refused as too new, never quarantined.
    @Test func aNewerCodecIsTooNew() async throws {
        let dir = try TemporaryDirectory()
        do {
            let queue = try DurableQueue.open(try configuration(dir, .zstd))
            try await queue.append(try weatherRecords(300))
            queue.close()
        }
        // Codec 2 with its checksum recomputed, as a newer writer would store it.
        try rewriteSegments(dir.file("queue.sqlite"), segment: "1") { $0.codec = 2 }
        let queue = try DurableQueue.open(try configuration(dir, .zstd))
        let error = try #require(throws: EdgeIngestError.self) { try queue.take(maxRecords: 10) }
        #expect(error.code == .queueFormatTooNew)
        #expect(try queue.statistics().quarantinedRecords == 0)
    }

    /// What the decoder says of frames that are not what the row declares
    /// (reached when a damaged row carries a matching checksum: written so
    /// by a faulty writer, or a checksum collision).
    @Test func damagedFramesAreRefusedWithWhatIsWrong() throws {
        let codec = SegmentCodec()
        let plain = Array(String(repeating: #"{"deviceId":"WX1278UIT","windSpeedInMph":3}"# + "\n", count: 50).utf8)
        let frame = plain.withUnsafeBytes { bytes in codec.encode(bytes) { stored, used in (Array(stored), used) } }
        #expect(frame.1 == SegmentCodec.zstd)
        func decode(_ bytes: [UInt8], _ size: Int) -> String {
            switch bytes.withUnsafeBytes({ codec.decode($0, plainBytes: Int64(size)) }) {
            case .success(let out): return out == plain ? "ok" : "other bytes"
            case .failure(let damage): return damage.message
            }
        }
        #expect(decode(frame.0, plain.count) == "ok")
        #expect(decode(frame.0, plain.count + 1).contains("holds \(plain.count) bytes, not the \(plain.count + 1)"))
        #expect(decode(Array(plain.prefix(40)), plain.count).contains("not a zstd frame"))
        #expect(decode(Array(frame.0.dropLast(3)), plain.count).contains("does not decompress"))
    }
}
