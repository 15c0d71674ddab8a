import Foundation
import TestSupport
import Testing

@testable import EdgeIngestCore

/// One queue, several sinks (docs/QUEUE.md "Several sinks"): each takes at
/// its own cursor, a record leaves only when every sink routed to it is done
/// with it, and the numbers add up for the queue and for each sink.
@Suite struct SinkCursorTests {
    static func alarm() throws -> RecordType {
        try RecordType(name: "Alarm", fields: [.init(name: "level", type: .int)])
    }

    static func configuration(_ dir: TemporaryDirectory, _ sinks: [QueueRouting.Sink]) throws -> QueueConfiguration {
        var configuration = try fileConfiguration(dir)
        configuration.objectTypes.append(try alarm())
        configuration.routing = QueueRouting(sinks: sinks)
        return configuration
    }

    /// Takes and acknowledges everything `sink` is owed; its records' winds
    /// (or levels), in order.
    static func drain(_ queue: DurableQueue, sink: String, batch: Int = 700) throws -> [String] {
        var lines: [String] = []
        while let lease = try queue.take(maxRecords: batch, singleType: true, sink: sink) {
            #expect(lease.sinkName == sink)
            lines += String(decoding: lease.payload, as: UTF8.self).split(separator: "\n").map(String.init)
            try queue.acknowledge(lease)
        }
        return lines
    }

    static func identityHolds(_ queue: DurableQueue) throws -> Bool {
        let s = try queue.statistics()
        return s.appendedTotal
            == s.queuedRecords + s.acknowledgedTotal + s.deadLetterRecords + s.quarantinedRecords
            + s.droppedByReason.values.reduce(0, +)
    }

    @Test func aSinkThatIsDownHoldsBackOnlyItself() async throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(
            try Self.configuration(dir, [.init(name: QueueRouting.defaultSinkName), .init(name: "archive")])
        )
        defer { queue.close() }
        for start in stride(from: 0, to: 3_000, by: 1_000) {
            try await queue.append(try weatherRecords(1_000, start: start))
        }
        // "upload" is down: it holds a lease it never acknowledges.
        let held = try #require(try queue.take(maxRecords: 500, sink: QueueRouting.defaultSinkName))
        #expect(try Self.drain(queue, sink: "archive").count == 3_000)
        #expect(try queue.statistics().queuedRecords == 3_000)  // still owed to "upload"
        let sinks = try queue.sinkStatistics()
        #expect(sinks.map(\.name) == ["upload", "archive"])
        #expect(sinks[0].queuedRecords == 3_000 && sinks[1].queuedRecords == 0)
        #expect(sinks[1].acknowledgedTotal == 3_000 && sinks[0].acknowledgedTotal == 0)
        // "upload" comes back: every record once, in order, then the file is empty.
        try queue.release(held)
        let lines = try Self.drain(queue, sink: QueueRouting.defaultSinkName)
        #expect(lines.count == 3_000)
        #expect(Set(lines).count == 3_000)
        let s = try queue.statistics()
        #expect(s.queuedRecords == 0 && s.queuedBytes == 0)
        #expect(s.acknowledgedTotal == 3_000)
        #expect(try Self.identityHolds(queue))
        let file = dir.file("queue.sqlite")
        #expect(try sqlite3(file, "SELECT count(*) FROM segments; SELECT count(*) FROM sink_progress;") == "0\n0")
    }

    @Test func routesSendEachTypeOnlyWhereItIsRouted() async throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(
            try Self.configuration(
                dir,
                [.init(name: "cloud"), .init(name: "alarms", types: ["Alarm"])]
            )
        )
        defer { queue.close() }
        try await queue.append(try weatherRecords(10))
        try await queue.append([try Self.alarm().validate(["level": .int(3)])])
        try await queue.append(try weatherRecords(5, start: 10))
        let alarms = try Self.drain(queue, sink: "alarms")
        #expect(alarms.count == 1 && alarms[0].contains("\"level\":3"))
        #expect(try queue.statistics().queuedRecords == 16)
        #expect(try Self.drain(queue, sink: "cloud").count == 16)
        #expect(try queue.statistics().queuedRecords == 0)
        let sinks = try queue.sinkStatistics()
        #expect(sinks.map(\.routedTotal) == [16, 1])
        #expect(try Self.identityHolds(queue))
    }

    /// Cursors inside one segment: one sink ahead, the other behind, both
    /// across a restart; the common prefix follows the slower one.
    @Test func cursorsSurviveAReopenInTheMiddleOfASegment() async throws {
        let dir = try TemporaryDirectory()
        let configuration = try Self.configuration(dir, [.init(name: "a"), .init(name: "b")])
        do {
            let queue = try DurableQueue.open(configuration)
            try await queue.append(try weatherRecords(100))
            let a = try #require(try queue.take(maxRecords: 60, sink: "a"))
            try queue.acknowledge(a)
            let b = try #require(try queue.take(maxRecords: 25, sink: "b"))
            try queue.acknowledge(b)
            #expect(try queue.statistics().queuedRecords == 75)
            queue.close()
        }
        let queue = try DurableQueue.open(configuration)
        defer { queue.close() }
        #expect(try queue.sinkStatistics().map(\.queuedRecords) == [40, 75])
        let restA = try Self.drain(queue, sink: "a")
        let restB = try Self.drain(queue, sink: "b")
        #expect(restA.count == 40 && restA.first?.contains("\"windSpeedInMph\":60") == true)
        #expect(restB.count == 75 && restB.first?.contains("\"windSpeedInMph\":25") == true)
        #expect(try queue.statistics().queuedRecords == 0)
        #expect(try Self.identityHolds(queue))
    }

    @Test func deadLettersBelongToTheSinkThatRefusedAndReplayGoesBackThere() async throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try Self.configuration(dir, [.init(name: "a"), .init(name: "b")]))
        defer { queue.close() }
        try await queue.append(try weatherRecords(4))
        let a = try #require(try queue.take(maxRecords: 10, sink: "a"))
        try queue.acknowledge(a, deadLetters: [1: "field rejected"])
        #expect(try Self.drain(queue, sink: "b").count == 4)
        let letters = try queue.deadLetters()
        #expect(letters.count == 1 && letters[0].sink == "a")
        #expect(try queue.statistics().queuedRecords == 0)
        #expect(try queue.sinkStatistics()[0].deadLetteredTotal == 1)
        // Refused by "a", delivered by "b" last: the queue counts it delivered.
        #expect(try queue.statistics().deadLetterRecords == 0)
        #expect(try queue.replayDeadLetters() == 1)
        #expect(try queue.take(maxRecords: 10, sink: "b") == nil)
        #expect(try Self.drain(queue, sink: "a").count == 1)
        #expect(try Self.identityHolds(queue))
    }

    @Test func aSinkOverItsLagBoundIsDroppedBehindAndTheOthersKeepEverything() async throws {
        let dir = try TemporaryDirectory()
        let bound: Int64 = 200_000  // a little over two commits of 500
        let queue = try DurableQueue.open(
            try Self.configuration(dir, [.init(name: "up"), .init(name: "down", maxLagBytes: bound)])
        )
        defer { queue.close() }
        for start in stride(from: 0, to: 5_000, by: 500) {
            try await queue.append(try weatherRecords(500, start: start))
        }
        let up = try Self.drain(queue, sink: "up")
        #expect(up.count == 5_000)
        let sinks = try queue.sinkStatistics()
        #expect(sinks[1].queuedBytes <= bound)
        let lagged = sinks[1].droppedByReason["sink_lagged"] ?? 0
        #expect(lagged > 0)
        #expect(sinks[1].queuedRecords + lagged == 5_000)
        // What "up" delivered and "down" was dropped behind for left the queue.
        #expect(try queue.statistics().queuedRecords == sinks[1].queuedRecords)
        #expect(try Self.identityHolds(queue))
        let down = try Self.drain(queue, sink: "down")
        #expect(Int64(down.count) == sinks[1].queuedRecords)
        #expect(down.first?.contains("\"windSpeedInMph\":\(lagged)") == true)
    }

    /// A file of one sink (no routing stored) opened with two sinks, one of
    /// them the default: the old records stay the default sink's; opened
    /// then with two other sinks, records owed to the removed sink alone
    /// go to the sinks now configured; nothing is lost.
    @Test func editingTheSinksLosesNothing() async throws {
        let dir = try TemporaryDirectory()
        var single = try fileConfiguration(dir)
        single.objectTypes.append(try Self.alarm())
        do {
            let queue = try DurableQueue.open(single)
            try await queue.append(try weatherRecords(10))
            queue.close()
        }
        do {
            let queue = try DurableQueue.open(
                try Self.configuration(dir, [.init(name: QueueRouting.defaultSinkName), .init(name: "archive")])
            )
            try await queue.append(try weatherRecords(5, start: 10))
            #expect(try queue.sinkStatistics().map(\.queuedRecords) == [15, 5])
            queue.close()
        }
        let queue = try DurableQueue.open(try Self.configuration(dir, [.init(name: "archive"), .init(name: "new")]))
        defer { queue.close() }
        // The 10 owed to "upload" alone go to both (neither had them); the
        // 5 stay "archive"'s.
        #expect(try queue.sinkStatistics().map(\.queuedRecords) == [15, 10])
        #expect(try queue.sinkStatistics().map(\.routedTotal) == [15, 10])
        #expect(try Self.drain(queue, sink: "archive").count == 15)
        #expect(try Self.drain(queue, sink: "new").count == 10)
        #expect(try queue.statistics().queuedRecords == 0)
        #expect(try Self.identityHolds(queue))
    }

    /// Back to one sink after the second fell behind: what only the
    /// removed sink still owed is not sent again to the one that had it.
    @Test func removingASinkNeverResendsToASinkThatHadTheReadings() async throws {
        let dir = try TemporaryDirectory()
        do {
            let queue = try DurableQueue.open(
                try Self.configuration(dir, [.init(name: QueueRouting.defaultSinkName), .init(name: "archive")])
            )
            try await queue.append(try weatherRecords(10))
            #expect(try Self.drain(queue, sink: QueueRouting.defaultSinkName).count == 10)
            #expect(try queue.statistics().queuedRecords == 10)  // the archive's
            queue.close()
        }
        var single = try fileConfiguration(dir)
        single.objectTypes.append(try Self.alarm())
        let queue = try DurableQueue.open(single)
        defer { queue.close() }
        #expect(try queue.take(maxRecords: 100) == nil)
        let s = try queue.statistics()
        #expect(s.queuedRecords == 0 && s.droppedByReason["sink_removed"] == 10)
        #expect(try Self.identityHolds(queue))
    }

    /// A removed sink's dead letters stay its own, even when its id goes
    /// to a sink added later.
    @Test func aRemovedSinksDeadLettersAreNotTheNextSinksOfItsId() async throws {
        let dir = try TemporaryDirectory()
        do {
            let queue = try DurableQueue.open(try Self.configuration(dir, [.init(name: "a"), .init(name: "b")]))
            try await queue.append(try weatherRecords(2))
            let lease = try #require(try queue.take(maxRecords: 10, sink: "a"))
            try queue.acknowledge(lease, deadLetters: [0: "refused"])
            queue.close()
        }
        let queue = try DurableQueue.open(try Self.configuration(dir, [.init(name: "b"), .init(name: "c")]))
        defer { queue.close() }
        let letters = try queue.deadLetters()
        #expect(letters.count == 1 && letters[0].sink == nil)
        #expect(try queue.purgeDeadLetters(sink: "c") == 0)
        #expect(try Self.drain(queue, sink: "b").count == 2)
        #expect(try Self.drain(queue, sink: "c").isEmpty)  // added after them
        #expect(try Self.identityHolds(queue))
    }

    /// A damaged dead letter of a sink, whose record another sink stored
    /// last, is quarantined without unbalancing the queue's numbers.
    @Test func aDamagedDeadLetterIsQuarantinedAndTheNumbersStillAddUp() async throws {
        let dir = try TemporaryDirectory()
        let configuration = try Self.configuration(dir, [.init(name: "a"), .init(name: "b")])
        do {
            let queue = try DurableQueue.open(configuration)
            try await queue.append(try weatherRecords(3))
            let lease = try #require(try queue.take(maxRecords: 10, sink: "a"))
            try queue.acknowledge(lease, deadLetters: [2: "refused"])
            #expect(try Self.drain(queue, sink: "b").count == 3)
            queue.close()
        }
        _ = try sqlite3(dir.file("queue.sqlite"), "UPDATE dead_letters SET checksum = checksum + 1;")
        let queue = try DurableQueue.open(configuration)
        defer { queue.close() }
        #expect(try queue.replayDeadLetters() == 0)
        let s = try queue.statistics()
        #expect(s.quarantinedRecords == 1 && s.deadLetterRecords == 0 && s.acknowledgedTotal == 3)
        #expect(try Self.identityHolds(queue))
    }

    @Test func aTypeRoutedToNoSinkIsRefusedAtOpen() throws {
        let dir = try TemporaryDirectory()
        #expect(throws: EdgeIngestError.self) {
            try DurableQueue.open(try Self.configuration(dir, [.init(name: "a", types: ["Alarm"])]))
        }
    }
}
