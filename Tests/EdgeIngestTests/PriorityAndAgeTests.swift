import Foundation
import TestSupport
import Testing

@testable import EdgeIngestCore

/// Priorities, drain order and maximum age (docs/QUEUE.md, "Priority and
/// age"): what leaves first after an outage, and what is dropped because
/// it is too old, aged on clocks a box without a real-time clock can trust.
@Suite struct PriorityAndAgeTests {
    static func alarm() throws -> RecordType {
        try RecordType(name: "Alarm", fields: [.init(name: "level", type: .int)])
    }

    static func configuration(_ dir: TemporaryDirectory) throws -> QueueConfiguration {
        var configuration = try fileConfiguration(dir)
        configuration.objectTypes.append(try alarm())
        configuration.compression = .none
        return configuration
    }

    @Test func anAlarmLeavesBeforeTheBacklogInFrontOfIt() async throws {
        let dir = try TemporaryDirectory()
        var configuration = try Self.configuration(dir)
        configuration.typeDelivery["Alarm"] = TypeDelivery(priority: 10)
        let queue = try DurableQueue.open(configuration)
        defer { queue.close() }
        for start in stride(from: 0, to: 5_000, by: 1_000) {
            try await queue.append(try weatherRecords(1_000, start: start))
        }
        try await queue.append([try Self.alarm().validate(["level": .int(3)])])
        try await queue.append(try weatherRecords(10, start: 5_000))
        let first = try #require(try queue.take(maxRecords: 1_000, singleType: true))
        #expect(first.segments.map(\.type) == ["Alarm"])
        try queue.acknowledge(first)
        // Then the backlog, oldest first, every record once.
        let rest = try drain(queue)
        #expect(rest.count == 5_010)
        let winds = try rest.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])["windSpeedInMph"]
                as? Int
        }
        #expect(winds == Array(0..<5_010))
    }

    @Test func newestFirstSendsTheLatestSegmentsFirstAndEachInItsOrder() async throws {
        let dir = try TemporaryDirectory()
        var configuration = try Self.configuration(dir)
        configuration.typeDelivery["WeatherSensor"] = TypeDelivery(drainOrder: .newestFirst)
        let queue = try DurableQueue.open(configuration)
        defer { queue.close() }
        for start in [0, 3, 6] { try await queue.append(try weatherRecords(3, start: start)) }
        var order: [Int] = []
        // Leases of two: the newest segment is taken in two parts.
        while let lease = try queue.take(maxRecords: 2) {
            for line in String(decoding: lease.payload, as: UTF8.self).split(separator: "\n") {
                let record = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
                order.append(record["windSpeedInMph"] as! Int)
            }
            try queue.acknowledge(lease)
        }
        #expect(order == [6, 7, 8, 3, 4, 5, 0, 1, 2])
        #expect(try queue.statistics().queuedRecords == 0 && queue.statistics().queuedBytes == 0)
    }

    /// The order is kept between takes and made anew when a segment is
    /// added: what arrives during the drain still goes first.
    @Test func aReadingAddedDuringTheDrainOvertakesTheBacklog() async throws {
        let dir = try TemporaryDirectory()
        var configuration = try Self.configuration(dir)
        configuration.typeDelivery["WeatherSensor"] = TypeDelivery(drainOrder: .newestFirst)
        let queue = try DurableQueue.open(configuration)
        defer { queue.close() }
        for start in [0, 3] { try await queue.append(try weatherRecords(3, start: start)) }
        var order: [Int] = []
        func takeOne() throws {
            let lease = try #require(try queue.take(maxRecords: 3))
            for line in String(decoding: lease.payload, as: UTF8.self).split(separator: "\n") {
                let record = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
                order.append(record["windSpeedInMph"] as! Int)
            }
            try queue.acknowledge(lease)
        }
        try takeOne()
        try await queue.append(try weatherRecords(3, start: 6))
        try takeOne()
        try takeOne()
        #expect(order == [3, 4, 5, 6, 7, 8, 0, 1, 2])
        #expect(try queue.take(maxRecords: 3) == nil)
    }

    /// With newest first, a lease is not the head of the queue: drop_oldest
    /// must still never drop what a lease holds, and may drop what is older.
    @Test func dropOldestNeverDropsALeasedSegmentThatIsNotTheHead() async throws {
        let dir = try TemporaryDirectory()
        var configuration = try Self.configuration(dir)
        configuration.typeDelivery["WeatherSensor"] = TypeDelivery(drainOrder: .newestFirst)
        configuration.overflowPolicy = .dropOldest
        configuration.maxRecords = 4
        let queue = try DurableQueue.open(configuration)
        defer { queue.close() }
        try await queue.append(try weatherRecords(2, start: 0))
        try await queue.append(try weatherRecords(2, start: 2))
        let lease = try #require(try queue.take(maxRecords: 10))
        #expect(lease.recordCount == 4)  // both segments, newest first
        try queue.release(lease)
        let newest = try #require(try queue.take(maxRecords: 2))
        #expect(String(decoding: newest.payload, as: UTF8.self).contains(#""windSpeedInMph":2"#))
        try await queue.append(try weatherRecords(2, start: 4))
        // The oldest segment (0, 1) made room; the leased one is intact.
        try queue.acknowledge(newest)
        #expect(try queue.statistics().droppedByReason == ["overflow_drop_oldest": 2])
        let rest = try drain(queue).joined(separator: "\n")
        #expect(rest.contains(#""windSpeedInMph":4"#) && !rest.contains(#""windSpeedInMph":0"#))
    }

    /// A three-day outage, told by the clocks: segments of earlier boots
    /// whose offsets are known are aged on their corrected time; one of a
    /// boot that never learnt its time cannot be aged and is kept; this
    /// boot's are aged on the boot-time clock alone.
    @Test func exactlyTheReadingsOlderThanTheirMaximumAgeAreDroppedAndCounted() async throws {
        try await withProcessWideState {
            let flag = try TemporaryDirectory()
            _ = FileManager.default.createFile(atPath: flag.file("synchronised"), contents: nil)
            ClockSynchronisation.useFlagFile(flag.file("synchronised"))
            defer { ClockSynchronisation.useFlagFile(nil) }
            let dir = try TemporaryDirectory()
            var configuration = try Self.configuration(dir)
            configuration.typeDelivery["WeatherSensor"] = TypeDelivery(maxAgeMilliseconds: 86_400_000)
            let queue = try DurableQueue.open(configuration)
            for (n, start) in [(3, 0), (4, 10), (5, 20), (6, 30)] {
                try await queue.append(try weatherRecords(n, start: start))
            }
            // Alarms have no maximum age: one accepted three days ago stays.
            try await queue.append([try Self.alarm().validate(["level": .int(1)])])
            queue.close()
            let path = dir.file("queue.sqlite")
            let now = wallClockMilliseconds()
            let day: Int64 = 86_400_000
            func segment(_ k: Int) -> String { "(SELECT id FROM segments ORDER BY id LIMIT 1 OFFSET \(k))" }
            // 3 records accepted three days ago, before NTP answered (boot 42).
            try restampSegments(path, segment: segment(0), boot: 42, boottime: 5_000, clock: 0)
            _ = try sqlite3(path, "INSERT INTO boots VALUES(42, zeroblob(16), 1, \(now - 3 * day - 5_000), NULL);")
            // 4 records accepted 23 hours ago (boot 43): kept.
            try restampSegments(path, segment: segment(1), boot: 43, boottime: 5_000, clock: 0)
            _ = try sqlite3(
                path,
                "INSERT INTO boots VALUES(43, zeroblob(16), 1, \(now - 23 * 3_600_000 - 5_000), NULL);"
            )
            // 5 records of a boot that never learnt its time: cannot be aged, kept.
            try restampSegments(path, segment: segment(2), boot: 44, boottime: 5_000, clock: 0)
            // 6 records of this boot, an hour ago: aged by the boot-time clock alone.
            let hourAgo = max(0, bootTimeMilliseconds() - 3_600_000)
            try restampSegments(path, segment: segment(3), boot: BootIdentity.current.key, boottime: hourAgo, clock: 0)
            // The alarm, three days ago: its type has no maximum age.
            try restampSegments(path, segment: segment(4), boot: 42, boottime: 5_000, clock: 0)
            let reopened = try DurableQueue.open(configuration)
            defer { reopened.close() }
            // The oldest, on its corrected time: three days, whatever its wall clock said.
            let oldest = try #require(try reopened.statistics().oldestAgeMilliseconds)
            #expect(abs(oldest - 3 * day) < 60_000, "\(oldest)")
            let lines = try drain(reopened)
            let statistics = try reopened.statistics()
            #expect(statistics.droppedByReason == ["expired": 3])
            #expect(lines.count == 16)  // 4 + 5 + 6 readings and the alarm
            let expiredWinds = [#""windSpeedInMph":0}"#, #""windSpeedInMph":1}"#, #""windSpeedInMph":2}"#]
            let kept = lines.filter { line in expiredWinds.contains { line.contains($0) } }
            #expect(kept.isEmpty, "\(kept)")
            #expect(lines.contains { $0.contains(#""level":1"#) })
            // Accounted for: accepted = uploaded + dropped + queued.
            #expect(statistics.appendedTotal == statistics.acknowledgedTotal + statistics.droppedTotal)
        }
    }

    @Test func agesAreToldOnlyByClocksThatCanTellThem() {
        let now = QueueAge.Now(boot: 9, boottime: 50_000, wall: 1_795_880_000_000, clock: 1)
        let offsets: [Int64: Int64] = [7: 1_795_000_000_000]
        func age(_ acceptance: Acceptance?, enqueuedAt: Int64 = 86_400_000, now: QueueAge.Now = now) -> Int64? {
            QueueAge.of(enqueuedAt: enqueuedAt, acceptance: acceptance, offsets: offsets, now: now)
        }
        // This boot: the boot-time clock, even at 1970 on the wall clock.
        #expect(age(Acceptance(boot: 9, boottime: 20_000, clock: 0)) == 30_000)
        // An earlier boot, corrected: the true time against the wall clock now.
        let corrected: Int64 = 1_795_880_000_000 - 1_795_000_001_000
        #expect(age(Acceptance(boot: 7, boottime: 1_000, clock: 0)) == corrected)
        // An earlier boot that never learnt its time: no age.
        #expect(age(Acceptance(boot: 8, boottime: 1_000, clock: 0)) == nil)
        // Measured when synchronised then.
        #expect(age(Acceptance(boot: 8, boottime: 1_000, clock: 1), enqueuedAt: 1_795_879_000_000) == 1_000_000)
        // Now unsynchronised, and this boot's offset unknown: no wall clock to age by.
        var unsynchronised = now
        unsynchronised.clock = 0
        #expect(age(Acceptance(boot: 7, boottime: 1_000, clock: 0), now: unsynchronised) == nil)
        // Unknown both ways: the wall clock as it reads.
        var unknown = now
        unknown.clock = nil
        #expect(age(nil, enqueuedAt: 1_795_879_000_000, now: unknown) == 1_000_000)
    }

    @Test func theOrderSQLPutsHigherPrioritiesAndNewestFirstTypesFirst() throws {
        var configuration = QueueConfiguration(location: .inMemory(identifier: "order"), objectTypes: [])
        #expect(configuration.segmentOrderSQL == nil)
        configuration.typeDelivery["A'x"] = TypeDelivery(priority: 5)
        configuration.typeDelivery["B"] = TypeDelivery(drainOrder: .newestFirst)
        configuration.typeDelivery["C"] = TypeDelivery(maxAgeMilliseconds: 5_000)
        #expect(
            configuration.segmentOrderSQL
                == "CASE type WHEN 'A''x' THEN 5 ELSE 0 END DESC, CASE WHEN type IN ('B') THEN -id ELSE id END"
        )
    }

    /// A chatty type floods the queue under drop_oldest; the alarms, the
    /// oldest readings of all but within their share, stay.
    @Test func aShareKeepsAChattyTypeFromPushingAnotherOut() async throws {
        let dir = try TemporaryDirectory()
        var configuration = try Self.configuration(dir)
        configuration.overflowPolicy = .dropOldest
        configuration.maxBytes = 4_096
        configuration.typeDelivery["Alarm"] = TypeDelivery(share: 0.25)
        let queue = try DurableQueue.open(configuration)
        defer { queue.close() }
        let alarms = try (0..<5).map { try Self.alarm().validate(["level": .int(Int64($0))]) }
        try await queue.append(alarms)
        for start in stride(from: 0, to: 200, by: 10) { try await queue.append(try weatherRecords(10, start: start)) }
        let statistics = try queue.statistics()
        #expect(statistics.queuedBytes <= 4_096)
        let dropped = try #require(statistics.droppedByReason["overflow_drop_oldest"])
        #expect(dropped > 0)
        let lines = try drain(queue)
        #expect(lines.filter { $0.contains(#""level":"#) }.count == 5)
        #expect(Int64(lines.count) + dropped == 205)
    }

    @Test func theDropOrderTakesWhatNoShareProtectsFirst() {
        typealias S = OverflowPlan.StoredSegment
        let segments = [
            S(id: 1, records: 1, bytes: 100, type: "A"), S(id: 2, records: 1, bytes: 100, type: "B"),
            S(id: 3, records: 1, bytes: 100, type: "A"), S(id: 4, records: 1, bytes: 100, type: "A"),
            S(id: 5, records: 1, bytes: 100, type: "B"),
        ]
        // A holds 300 with 200 reserved: its oldest 100 is beyond the share.
        #expect(OverflowPlan.dropOrder(segments, reserved: ["A": 200]).map(\.id) == [1, 2, 5, 3, 4])
        #expect(OverflowPlan.dropOrder(segments, reserved: ["A": 300]).map(\.id) == [2, 5, 1, 3, 4])
        #expect(OverflowPlan.dropOrder(segments, reserved: [:]).map(\.id) == [1, 2, 3, 4, 5])
    }
}
