import EdgeIngest
import Foundation
import TestSupport
import Testing

@Suite struct QueueCorruptionTests {
    @Test func garbageFileIsAClearErrorAndIsLeftUntouched() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("queue.sqlite")
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: EdgeIngestError.self) { try DurableQueue.open(try fileConfiguration(dir)) }
        #expect(error.code == .queueCorrupt)
        #expect(error.message.contains("'\(path)'"))
        #expect(error.message.contains("left untouched"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == garbage)
    }

    @Test func foreignSQLiteDatabaseIsRefused() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("other.sqlite")
        _ = try sqlite3(path, "CREATE TABLE t(x); INSERT INTO t VALUES(1);")  // throws if sqlite3 fails
        let error = try #require(throws: EdgeIngestError.self) {
            try DurableQueue.open(try fileConfiguration(dir, "other.sqlite"))
        }
        #expect(error.code == .queueCorrupt)
        #expect(error.message.contains("is an SQLite database but not an EdgeIngest queue"))
    }

    @Test func quarantineMovesTheDamagedFileAsideOnlyWhenAsked() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("queue.sqlite")
        try Data(repeating: 0xAB, count: 4096).write(to: URL(fileURLWithPath: path))
        var configuration = try fileConfiguration(dir)
        configuration.quarantineCorruptFile = true
        let queue = try DurableQueue.open(configuration)
        let moved = try #require(queue.quarantinedFile)
        #expect(moved.hasPrefix(path + ".corrupt-"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: moved)) == Data(repeating: 0xAB, count: 4096))
        #expect(try queue.statistics().queuedRecords == 0)
    }

    @Test func damagedSegmentIsReportedNotSent() async throws {
        let dir = try TemporaryDirectory()
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            try await queue.append(try weatherRecords(3))
            queue.close()
        }
        _ = try sqlite3(dir.file("queue.sqlite"), "UPDATE segments SET ids = x'00';")  // throws if sqlite3 fails
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let error = try #require(throws: EdgeIngestError.self) { try queue.take(maxRecords: 10) }
        #expect(error.code == .queueCorrupt)
        #expect(error.message.contains("is damaged"))
    }

    @Test func newerSchemaVersionIsRefusedWithoutChange() async throws {
        let dir = try TemporaryDirectory()
        var configuration = try fileConfiguration(dir)
        configuration.schemaVersion = 3
        do {
            let queue = try DurableQueue.open(configuration)
            try await queue.append(try weatherRecords(1))
            queue.close()
        }
        configuration.schemaVersion = 2
        let error = try #require(throws: EdgeIngestError.self) { try DurableQueue.open(configuration) }
        #expect(error.message.contains("holds records of schema version 3, newer than the configured 2"))
        configuration.schemaVersion = 3
        #expect(try DurableQueue.open(configuration).statistics().queuedRecords == 1)
    }
}
