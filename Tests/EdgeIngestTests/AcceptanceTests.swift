import Foundation
import TestSupport
import Testing

@testable import EdgeIngestCore

/// Format 4's acceptance data (docs/QUEUE.md, "The format (version 4)"):
/// each segment keeps the boot and boot-time clock of its commit, the
/// file keeps a row per boot, and a copy carries both along.
@Suite struct AcceptanceTests {
    @Test func aSegmentKeepsTheBootAndTheBootTimeClockOfItsCommit() async throws {
        let dir = try TemporaryDirectory()
        let before = bootTimeMilliseconds()
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            try await queue.append(try weatherRecords(3))
            queue.close()
        }
        let after = bootTimeMilliseconds()
        let path = dir.file("queue.sqlite")
        let row = try sqlite3(path, "SELECT boot, accepted_boottime FROM segments;")
            .trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "|").map { Int64($0)! }
        #expect(row[0] == BootIdentity.current.key)
        #expect((before...after).contains(row[1]), "\(row[1]) not in \(before)...\(after)")
        // This boot's row, with the kernel's whole boot id.
        let text = try String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "-", with: "")
        #expect(try sqlite3(path, "SELECT lower(hex(boot_id)) FROM boots WHERE boot = \(row[0]);") == text)
    }

    @Test func aCopyCarriesTheBootsOfWhatItCopies() async throws {
        let dir = try TemporaryDirectory()
        let source = try DurableQueue.open(try fileConfiguration(dir, "source.sqlite"))
        try await source.append(try weatherRecords(3))
        source.close()
        // A boot of another box, with its offset known.
        _ = try sqlite3(
            dir.file("source.sqlite"),
            "INSERT INTO boots VALUES(42, x'00112233445566778899aabbccddeeff', 1000, 1795850000000, 1795850000500);"
        )
        let reopened = try DurableQueue.open(try fileConfiguration(dir, "source.sqlite"))
        let target = try DurableQueue.open(try fileConfiguration(dir, "target.sqlite"))
        #expect(try reopened.copyPending(into: target) == 3)
        target.close()
        reopened.close()
        #expect(
            try sqlite3(dir.file("target.sqlite"), "SELECT offset_ms, synchronised_at FROM boots WHERE boot = 42;")
                == "1795850000000|1795850000500"
        )
        let ownBoot = "SELECT count(*) FROM segments WHERE boot = \(BootIdentity.current.key);"
        #expect(try sqlite3(dir.file("target.sqlite"), ownBoot) == "1")
    }
}
