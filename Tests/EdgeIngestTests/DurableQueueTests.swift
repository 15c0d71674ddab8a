import EdgeIngest
import Foundation
import TestSupport
import Testing

func fileConfiguration(_ dir: TemporaryDirectory, _ name: String = "queue.sqlite") throws -> QueueConfiguration {
    QueueConfiguration(location: .file(path: dir.file(name)), objectTypes: [try declaredWeatherSensor()])
}

/// Takes and acknowledges everything; returns the records' JSON lines in order.
func drain(_ queue: DurableQueue, batch: Int = 1000) throws -> [String] {
    var lines: [String] = []
    while let lease = try queue.take(maxRecords: batch) {
        lines += String(decoding: lease.payload, as: UTF8.self).split(separator: "\n").map(String.init)
        try queue.acknowledge(lease)
    }
    return lines
}

@Suite struct DurableQueueTests {
    @Test func recordsComeOutInAppendOrderAcrossBatchesAndLeases() async throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        var written: [Record] = []
        for b in 0..<7 {
            let batch = try weatherRecords(13 + b, start: written.count)
            try await queue.append(batch)
            written += batch
        }
        #expect(try queue.statistics().queuedRecords == Int64(written.count))
        let lines = try drain(queue, batch: 10)
        #expect(lines == written.map(\.jsonString))
        #expect(try queue.statistics().queuedRecords == 0)
        #expect(try queue.statistics().queuedBytes == 0)
    }

    @Test func leaseCarriesIdsTypesAndAStableId() async throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let records = try weatherRecords(5)
        try await queue.append(records)
        let lease = try #require(try queue.take(maxRecords: 3))
        #expect(lease.recordIDs == records.prefix(3).map(\.id))
        #expect(lease.segments.map(\.type) == ["WeatherSensor"])
        #expect(lease.segments.map(\.recordCount) == [3])
        #expect(lease.id == "\(records[0].id.hexString)-3")
        #expect(String(decoding: lease.recordJSON(at: 1), as: UTF8.self) == records[1].jsonString)
        // Released and taken again: the same records, the same id.
        try queue.release(lease)
        let again = try #require(try queue.take(maxRecords: 3))
        #expect(again.id == lease.id)
        #expect(again.payload == lease.payload)
        try queue.acknowledge(again)
    }

    @Test func partialAcknowledgementKeepsTheRestAtTheHead() async throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let records = try weatherRecords(10)
        try await queue.append(records)
        let lease = try #require(try queue.take(maxRecords: 10))
        try queue.acknowledge(lease, count: 4)
        #expect(try queue.statistics().queuedRecords == 6)
        let rest = try #require(try queue.take(maxRecords: 100))
        #expect(rest.recordIDs == records[4...].map(\.id))
        try queue.acknowledge(rest)
    }

    @Test func maxBytesLimitsALeaseButAlwaysTakesOneRecord() async throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        try await queue.append(try weatherRecords(10))
        let one = try #require(try queue.take(maxRecords: 10, maxBytes: 10))
        #expect(one.recordCount == 1)
        try queue.release(one)
        let some = try #require(try queue.take(maxRecords: 10, maxBytes: 400))
        #expect(some.recordCount == 2)  // each line is ~150 bytes
        #expect(some.payload.count <= 400)
        try queue.release(some)
    }

    @Test func leaseMisuseIsRefused() async throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        try await queue.append(try weatherRecords(3))
        let lease = try #require(try queue.take(maxRecords: 1))
        #expect(throws: EdgeIngestError.self) { try queue.take(maxRecords: 1) }
        try queue.acknowledge(lease)
        let error = try #require(throws: EdgeIngestError.self) { try queue.acknowledge(lease) }
        #expect(error.code == .leaseMisuse)
        #expect(try queue.statistics().queuedRecords == 2)
    }

    @Test func reopeningKeepsRecordsCountersAndPositions() async throws {
        let dir = try TemporaryDirectory()
        let records = try weatherRecords(50)
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            try await queue.append(
                Array(records[..<30]),
                positions: [SourcePosition(source: "file:a", position: "1200")]
            )
            try await queue.append(
                Array(records[30...]),
                positions: [SourcePosition(source: "file:a", position: "2000")]
            )
            let lease = try #require(try queue.take(maxRecords: 20))
            try queue.acknowledge(lease)
            queue.close()
        }
        let reopened = try DurableQueue.open(try fileConfiguration(dir))
        let stats = try reopened.statistics()
        #expect(stats.queuedRecords == 30)
        #expect(stats.appendedTotal == 50)
        #expect(stats.acknowledgedTotal == 20)
        #expect(stats.oldestEnqueuedAt != nil)
        #expect(try reopened.positions() == ["file:a": "2000"])
        #expect(try drain(reopened) == records[20...].map(\.jsonString))
    }

    @Test func onlyConfiguredObjectTypesAreAccepted() async throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let other = try RecordType(name: "DoorSensor", fields: [.init(name: "open", type: .bool)])
        let door = try other.validate(["open": true])
        // One bad record refuses the whole batch: nothing of it is stored.
        let batch = try weatherRecords(3) + [door]
        let error = try await #require(throws: EdgeIngestError.self) { try await queue.append(batch) }
        #expect(error.code == .unknownObjectType)
        #expect(error.message.hasPrefix("Record type 'DoorSensor' is not among the object types of the queue"))
        #expect(try queue.statistics().queuedRecords == 0)
        #expect(try queue.statistics().appendedTotal == 0)
    }

    @Test func mixedTypeBatchesKeepOrderAndTypes() async throws {
        let dir = try TemporaryDirectory()
        let door = try RecordType(name: "DoorSensor", fields: [.init(name: "open", type: .bool)])
        var configuration = try fileConfiguration(dir)
        configuration.objectTypes.append(door)
        let queue = try DurableQueue.open(configuration)
        let w = try weatherRecords(2)
        let batch = [w[0], try door.validate(["open": true]), w[1]]
        try await queue.append(batch)
        let lease = try #require(try queue.take(maxRecords: 10))
        #expect(lease.segments.map(\.type) == ["WeatherSensor", "DoorSensor", "WeatherSensor"])
        #expect(lease.recordIDs == batch.map(\.id))
        try queue.acknowledge(lease)
    }

    @Test func fileAndDirectoryArePrivate() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("state/nested/queue.sqlite")
        let queue = try DurableQueue.open(
            QueueConfiguration(location: .file(path: path), objectTypes: [try declaredWeatherSensor()])
        )
        try await queue.append(try weatherRecords(1))
        func mode(_ p: String) throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: p)[.posixPermissions] as! NSNumber).intValue
        }
        #expect(try mode(dir.file("state/nested")) == 0o700)
        #expect(try mode(dir.file("state")) == 0o700)
        #expect(try mode(path) == 0o600)
        #expect(try mode(path + "-wal") == 0o600)
    }

    @Test func inMemoryQueueSharesByIdentifierAndLeavesNoFile() async throws {
        let dir = try TemporaryDirectory()
        let before = try FileManager.default.contentsOfDirectory(atPath: FileManager.default.currentDirectoryPath)
        let identifier = "test-\(UUID())"
        let configuration = QueueConfiguration(
            location: .inMemory(identifier: identifier),
            objectTypes: [try declaredWeatherSensor()]
        )
        do {
            let a = try DurableQueue.open(configuration)
            try await a.append(try weatherRecords(4))
            let b = try DurableQueue.open(configuration)
            #expect(try b.statistics().queuedRecords == 4)
            #expect(try b.statistics().fileBytes == 0)
        }
        // The last handle is gone: the data is gone.
        let fresh = try DurableQueue.open(configuration)
        #expect(try fresh.statistics().queuedRecords == 0)
        let after = try FileManager.default.contentsOfDirectory(atPath: FileManager.default.currentDirectoryPath)
        #expect(Set(after) == Set(before))
        // Nor a file named after the identifier where SQLite keeps temporary files.
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory()).allSatisfy {
                !$0.contains(identifier)
            }
        )
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
    }

    @Test func aSecondProcessCannotOpenAQueueInUse() async throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        try await queue.append(try weatherRecords(1))
        // flock is per open file: a child process trying the same file fails.
        let probe = try CrashProbe.run(["--hold-check", dir.file("queue.sqlite")])
        #expect(probe.status == 3)
        #expect(probe.stderr.contains("is in use: another process has it open"))
        withExtendedLifetime(queue) {}
    }

    /// A lock held only for a moment — a child forked by this process holds
    /// the queue's flock until its exec — delays an open, never refuses it.
    @Test func aQueueLockedForAMomentOpensOnceItIsFree() async throws {
        let dir = try TemporaryDirectory()
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            try await queue.append(try weatherRecords(1))
            queue.close()
        }
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        holder.arguments = ["--exclusive", dir.file("queue.sqlite"), "sleep", "0.3"]
        try holder.run()
        // Wait until the holder really has the lock, then open.
        var held = false
        for _ in 0..<100 where !held {
            let fd = open(dir.file("queue.sqlite"), O_RDONLY | O_CLOEXEC)
            held = flock(fd, LOCK_EX | LOCK_NB) != 0
            close(fd)
            if !held { usleep(2_000) }
        }
        try #require(held, "flock(1) never took the lock")
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        #expect(try queue.statistics().queuedRecords == 1)
        holder.waitUntilExit()
    }

    @Test func emptyObjectTypesAreAConfigurationError() throws {
        let dir = try TemporaryDirectory()
        let error = try #require(throws: EdgeIngestError.self) {
            try DurableQueue.open(QueueConfiguration(location: .file(path: dir.file("q")), objectTypes: []))
        }
        #expect(error.code == .invalidConfiguration)
    }
}
