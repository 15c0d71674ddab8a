import Foundation
import TestSupport
import Testing

@testable import EdgeIngestCore

/// What leaves the queue of a reading's acceptance time (docs/QUEUE.md,
/// "Boxes without a real-time clock"): measured, corrected with the
/// boot's offset, or marked; held while it can still be corrected.
@Suite struct AcceptanceStampTests {
    static let stamping = AcceptanceStamping(timeField: "accepted_at", clockField: "accepted_clock")

    @Test func eachClockStateGivesItsTime() {
        let now = Int64(1_795_880_000_000)
        let offsets: [Int64: Int64] = [7: 1_795_000_000_000]
        func time(_ acceptance: Acceptance?, hold: Bool = false) -> AcceptanceTime? {
            AcceptanceTime.of(enqueuedAt: now, acceptance: acceptance, offsets: offsets, currentBoot: 9, hold: hold)
        }
        // Synchronised: the wall clock at the commit, whatever the offset.
        #expect(
            time(Acceptance(boot: 7, boottime: 5, clock: 1)) == AcceptanceTime(milliseconds: now, clock: .synchronised)
        )
        // Not synchronised, the boot's offset known later: boot-time clock + offset.
        #expect(
            time(Acceptance(boot: 7, boottime: 5_000, clock: 0))
                == AcceptanceTime(milliseconds: 1_795_000_005_000, clock: .corrected)
        )
        // An earlier boot never synchronised: marked, never held.
        #expect(
            time(Acceptance(boot: 8, boottime: 5_000, clock: 0), hold: true)
                == AcceptanceTime(milliseconds: now, clock: .unsynchronised)
        )
        // This boot, not yet synchronised: held when asked, else marked.
        #expect(time(Acceptance(boot: 9, boottime: 5_000, clock: 0), hold: true) == nil)
        #expect(
            time(Acceptance(boot: 9, boottime: 5_000, clock: 0))
                == AcceptanceTime(milliseconds: now, clock: .unsynchronised)
        )
        // Unknown state: nothing would release it, so never held.
        #expect(
            time(Acceptance(boot: 9, boottime: 5_000, clock: nil), hold: true)
                == AcceptanceTime(milliseconds: now, clock: .unknown)
        )
        // A row from before format 4.
        #expect(time(nil) == AcceptanceTime(milliseconds: now, clock: .unknown))
    }

    @Test func aLeaseCarriesTheFieldsAndAnAcknowledgementConsumesWhatIsStored() async throws {
        let dir = try TemporaryDirectory()
        var configuration = try fileConfiguration(dir)
        configuration.acceptanceStamps["WeatherSensor"] = Self.stamping
        configuration.compression = .none
        let queue = try DurableQueue.open(configuration)
        defer { queue.close() }
        try await queue.append(try weatherRecords(5))
        let path = dir.file("queue.sqlite")
        try restampSegments(path, boot: 42, boottime: 60_000, clock: 0)
        _ = try sqlite3(path, "INSERT INTO boots VALUES(42, zeroblob(16), 1, 1795000000000, 1795000100000);")
        // Leases of two, so acknowledgements consume a segment in parts.
        var lines: [String] = []
        while let lease = try queue.take(maxRecords: 2) {
            let text = String(decoding: lease.payload, as: UTF8.self)
            lines += text.split(separator: "\n").map(String.init)
            try queue.acknowledge(lease)
        }
        #expect(lines.count == 5)
        for (i, line) in lines.enumerated() {
            #expect(
                line.hasPrefix(#"{"accepted_at":"2026-11-18T11:07:40.000Z","accepted_clock":"corrected","_id":""#),
                "\(line)"
            )
            let record = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            #expect(record["windSpeedInMph"] as? Int == i)
        }
        #expect(try queue.statistics().queuedBytes == 0)
        #expect(try queue.statistics().queuedRecords == 0)
    }

    @Test func aDeadLetterKeepsTheRecordAsStored() async throws {
        let dir = try TemporaryDirectory()
        var configuration = try fileConfiguration(dir)
        configuration.acceptanceStamps["WeatherSensor"] = Self.stamping
        let queue = try DurableQueue.open(configuration)
        defer { queue.close() }
        try await queue.append(try weatherRecords(2))
        let lease = try #require(try queue.take(maxRecords: 10))
        #expect(String(decoding: lease.recordJSON(at: 1), as: UTF8.self).contains("accepted_clock"))
        try queue.acknowledge(lease, deadLetters: [1: "refused"])
        let kept = try sqlite3(dir.file("queue.sqlite"), "SELECT CAST(payload AS TEXT) FROM dead_letters;")
        #expect(kept.hasPrefix(#"{"_id":""#), "\(kept)")
        #expect(!kept.contains("accepted"))
    }

    @Test func heldSegmentsWaitForTheOffsetAndLeaveCorrected() async throws {
        let dir = try TemporaryDirectory()
        let configuration = try Self.holding(dir)
        let queue = try DurableQueue.open(configuration)
        defer { queue.close() }
        try await queue.append(try weatherRecords(2))
        try await queue.append(try weatherRecords(1, start: 2))
        let path = dir.file("queue.sqlite")
        let me = BootIdentity.current.key
        // The first segment: accepted in this boot, clock unsynchronised.
        try restampSegments(path, segment: "(SELECT min(id) FROM segments)", boot: me, boottime: 1_000, clock: 0)
        try restampSegments(path, segment: "(SELECT max(id) FROM segments)", boot: me, boottime: 2_000, clock: 1)
        _ = try sqlite3(path, "UPDATE boots SET offset_ms = NULL WHERE boot = \(me);")
        let reopened = try reopen(queue, configuration)
        // Only the synchronised segment leaves; the held one waits.
        let first = try #require(try reopened.take(maxRecords: 10))
        #expect(first.recordCount == 1)
        #expect(String(decoding: first.payload, as: UTF8.self).contains(#""accepted_clock":"synchronised""#))
        try reopened.acknowledge(first)
        #expect(try reopened.take(maxRecords: 10) == nil)
        // The offset becomes known: it leaves, corrected.
        _ = try sqlite3(path, "UPDATE boots SET offset_ms = 1795000000000 WHERE boot = \(me);")
        let released = try reopen(reopened, configuration)
        defer { released.close() }
        let second = try #require(try released.take(maxRecords: 10))
        #expect(second.recordCount == 2)
        #expect(
            String(decoding: second.payload, as: UTF8.self)
                .hasPrefix(#"{"accepted_at":"2026-11-18T11:06:41.000Z","accepted_clock":"corrected""#)
        )
    }

    /// A reboot between acceptance and upload: the boot that accepted
    /// these never learnt the time (no offset), so nothing can correct
    /// them — they leave at once, marked, even for a type that holds.
    @Test func readingsOfAnEarlierBootThatNeverLearntTheTimeLeaveMarked() async throws {
        let dir = try TemporaryDirectory()
        let configuration = try Self.holding(dir)
        let queue = try DurableQueue.open(configuration)
        defer { queue.close() }
        try await queue.append(try weatherRecords(2))
        try restampSegments(dir.file("queue.sqlite"), boot: 77, boottime: 3_000, clock: 0)
        let lease = try #require(try queue.take(maxRecords: 10))
        #expect(lease.recordCount == 2)
        let text = String(decoding: lease.payload, as: UTF8.self)
        #expect(text.split(separator: "\n").allSatisfy { $0.contains(#""accepted_clock":"unsynchronised""#) })
        try queue.acknowledge(lease)
    }

    @Test func aStampedFieldMustNotBeADeclaredOne() throws {
        let dir = try TemporaryDirectory()
        var configuration = try fileConfiguration(dir)
        configuration.acceptanceStamps["WeatherSensor"] = AcceptanceStamping(timeField: "deviceId")
        #expect(throws: EdgeIngestError.self) { try DurableQueue.open(configuration) }
        configuration.acceptanceStamps = ["Nope": Self.stamping]
        #expect(throws: EdgeIngestError.self) { try DurableQueue.open(configuration) }
    }

    /// A plain (uncompressed) queue in `dir` whose WeatherSensor records
    /// get both fields and wait for the clock.
    static func holding(_ dir: TemporaryDirectory) throws -> QueueConfiguration {
        var configuration = try fileConfiguration(dir)
        var holding = Self.stamping
        holding.holdUnsynchronised = true
        configuration.acceptanceStamps["WeatherSensor"] = holding
        configuration.compression = .none
        return configuration
    }

    /// Closes `queue` and opens its file again (reads `boots` afresh).
    private func reopen(_ queue: DurableQueue, _ configuration: QueueConfiguration) throws -> DurableQueue {
        queue.close()
        return try DurableQueue.open(configuration)
    }
}
