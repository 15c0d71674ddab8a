import Foundation
import TestSupport
import Testing

@testable import EdgeIngestCore

/// `DurableQueue.repair` on files SQLite itself cannot read, damaged where
/// a small (compressed) queue file is most often hit: the schema's text,
/// the header, a cut before a table's root page, and a b-tree that answers
/// ids out of order. Each comes back readable, with every intact reading
/// and the rest accounted for — and repair finishes.
@Suite struct QueueSalvageTests {
    /// A queue of 10 segments × 100 readings; returns the file's path.
    func filled(_ dir: TemporaryDirectory) async throws -> String {
        try await filledWithLines(dir).path
    }

    func filledWithLines(_ dir: TemporaryDirectory) async throws -> (path: String, lines: [String]) {
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        var lines: [String] = []
        for b in 0..<10 {
            let records = try weatherRecords(100, start: b * 100)
            try await queue.append(records)
            lines += records.map(\.jsonString)
        }
        queue.close()
        return (dir.file("queue.sqlite"), lines)
    }

    func patch(_ path: String, at offset: Int, _ bytes: [UInt8]) throws {
        var file = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        file.replaceSubrange(offset..<offset + bytes.count, with: bytes)
        try Data(file).write(to: URL(fileURLWithPath: path))
    }

    /// Repairs, then checks the file verifies and its readings add up.
    func repairedAndAccounted(_ dir: TemporaryDirectory, expectAllReadings: Bool = true) throws -> [String] {
        let repair = try DurableQueue.repair(try fileConfiguration(dir))
        #expect(repair.damagedFileCopy != nil, "SQLite could not read the file: it is rebuilt")
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        defer { queue.close() }
        #expect(try queue.verify().isIntact)
        let lines = try drain(queue)
        let stats = try queue.statistics()
        if expectAllReadings { #expect(lines.count == 1000) }
        #expect(Int64(lines.count) + stats.quarantinedRecords + (stats.droppedByReason["damaged"] ?? 0) == 1000)
        return lines
    }

    @Test func aDamagedTableDefinitionIsPutBack() async throws {
        let dir = try TemporaryDirectory()
        let path = try await filled(dir)
        let text = try Data(contentsOf: URL(fileURLWithPath: path))
        // "consumed_bytes" in the segments table's CREATE text becomes "consumed_byteS".
        let at = try #require(text.range(of: Data("consumed_bytes INTEGER".utf8)))
        try patch(path, at: at.lowerBound + 13, [UInt8(ascii: "S")])
        #expect(throws: EdgeIngestError.self) { try DurableQueue.open(try fileConfiguration(dir)) }
        _ = try repairedAndAccounted(dir)
    }

    @Test func aDamagedHeaderIsPutBack() async throws {
        let dir = try TemporaryDirectory()
        let path = try await filled(dir)
        try patch(path, at: 3, [UInt8(ascii: "l") ^ 4])  // the magic string
        try patch(path, at: 16, [0x30])  // page size 0x3000: not a power of two
        try patch(path, at: 47, [5])  // schema format 5
        _ = try repairedAndAccounted(dir)
    }

    @Test func aFileCutBeforeATablesRootPageIsRebuilt() async throws {
        let dir = try TemporaryDirectory()
        let path = try await filled(dir)
        let file = try Data(contentsOf: URL(fileURLWithPath: path))
        // Pages 1–4 kept (the schema; the roots of segments, sqlite_sequence
        // and counters): positions, meta, dead_letters and quarantine have
        // their roots cut off, and every segment's payload is gone.
        try file.prefix(4096 * 4).write(to: URL(fileURLWithPath: path))
        _ = try repairedAndAccounted(dir, expectAllReadings: false)
    }

    /// Many files with 200 random bit flips each (a small queue file is
    /// hit in its schema, header and b-tree pages, not only in payloads):
    /// every repair finishes — one once looped for ever on a damaged page
    /// answering ids out of order — and leaves a file that verifies, from
    /// which only readings as written come, each once. (How many are
    /// accounted for is exact only while the damage spares the counters
    /// and the record counts, which carry no checksum of their own:
    /// `QueueDamageTests` checks the sum on fixed patterns.)
    @Test(.timeLimit(.minutes(1))) func repairAlwaysEndsWithAFileThatVerifies() async throws {
        let source = try TemporaryDirectory()
        let (path, writtenLines) = try await filledWithLines(source)
        let clean = try Data(contentsOf: URL(fileURLWithPath: path))
        let written = Set(writtenLines)
        var delivered = 0
        for seed in UInt64(1)...40 {
            let dir = try TemporaryDirectory()
            var bytes = [UInt8](clean)
            var random = SplitMix64(seed: seed)
            for _ in 0..<(seed % 2 == 0 ? 200 : 12) {
                bytes[Int(random.next() % UInt64(bytes.count))] ^= 1 << UInt8(random.next() % 8)
            }
            try Data(bytes).write(to: URL(fileURLWithPath: dir.file("queue.sqlite")))
            let repair = try DurableQueue.repair(try fileConfiguration(dir))
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            defer { queue.close() }
            #expect(try queue.verify().isIntact, "seed \(seed): \(repair)")
            let lines = try drain(queue)
            #expect(lines.allSatisfy(written.contains), "seed \(seed): a garbled reading")
            #expect(Set(lines).count == lines.count, "seed \(seed): a reading twice")
            delivered += lines.count
        }
        #expect(delivered > 10_000, "most readings of lightly damaged files come through")
    }
}
