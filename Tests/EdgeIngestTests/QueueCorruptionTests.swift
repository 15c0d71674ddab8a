import EdgeIngest
import EdgeIngestCore
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

    @Test func damagedSegmentIsQuarantinedAndTheRestFlows() async throws {
        let dir = try TemporaryDirectory()
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            try await queue.append(try weatherRecords(3))
            try await queue.append(try weatherRecords(2, start: 3))
            queue.close()
        }
        // sqlite3 throws if it fails.
        _ = try sqlite3(dir.file("queue.sqlite"), "UPDATE segments SET ids = x'00' WHERE id = 1;")
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let lease = try #require(try queue.take(maxRecords: 10))
        #expect(lease.recordCount == 2)
        let statistics = try queue.statistics()
        #expect(statistics.quarantinedRecords == 3)
        #expect(statistics.queuedRecords == 2)
        let moved = try sqlite3(dir.file("queue.sqlite"), "SELECT origin, record_count FROM quarantine;")
        #expect(moved.trimmingCharacters(in: .whitespacesAndNewlines) == "segment 1|3")
    }

    @Test(arguments: [
        "UPDATE segments SET payload = CAST(replace(CAST(payload AS TEXT), '66.7', '66.8') AS BLOB)",
        "UPDATE segments SET ids = x'000000000000000000000001' || substr(ids, 13)",
        "UPDATE segments SET type = 'Other'",
        "UPDATE segments SET schema_version = 2",
        "UPDATE segments SET record_count = 2",
    ])
    func anyChangeToWhatIsSentIsDetected(_ damage: String) async throws {
        let dir = try TemporaryDirectory()
        // Stored plain, so the damage can name a value; compressed payloads: below.
        var configuration = try fileConfiguration(dir)
        configuration.compression = .none
        do {
            let queue = try DurableQueue.open(configuration)
            try await queue.append(try weatherRecords(3))
            queue.close()
        }
        _ = try sqlite3(dir.file("queue.sqlite"), damage + ";")
        let queue = try DurableQueue.open(configuration)
        let report = try queue.verify()
        #expect(report.damage.map(\.location) == ["segment 1"])
        #expect(report.damage.first?.problem.contains("checksum") == true)
        #expect(!report.isIntact)
        #expect(try queue.take(maxRecords: 10) == nil)
        if damage.contains("record_count") {
            // The damaged count is all the queue can go by: the third record shows as missing.
            #expect(try queue.statistics().quarantinedRecords == 2)
            #expect(try queue.verify().accountingGap == 1)
        } else {
            #expect(try queue.statistics().quarantinedRecords == 3)
            #expect(try queue.verify().isIntact)
        }
    }

    @Test func acknowledgedPrefixOffARecordBoundaryIsDamage() async throws {
        let dir = try TemporaryDirectory()
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            try await queue.append(try weatherRecords(3))
            queue.close()
        }
        _ = try sqlite3(dir.file("queue.sqlite"), "UPDATE segments SET consumed = 1, consumed_bytes = 7;")
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        #expect(try queue.verify().damage.first?.problem.contains("does not end on a record") == true)
        #expect(try queue.take(maxRecords: 10) == nil)
    }

    @Test func emptyQueueFileIsDamageNotANewQueue() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("queue.sqlite")
        FileManager.default.createFile(atPath: path, contents: Data())
        let error = try #require(throws: EdgeIngestError.self) { try DurableQueue.open(try fileConfiguration(dir)) }
        #expect(error.code == .queueCorrupt)
        #expect(error.message.contains("is empty (0 bytes)"))
        var configuration = try fileConfiguration(dir)
        configuration.quarantineCorruptFile = true
        let queue = try DurableQueue.open(configuration)
        #expect(queue.quarantinedFile?.hasPrefix(path + ".corrupt-") == true)
    }

    @Test func aNewQueueFileIsNeverEmpty() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        #expect(try FileManager.default.attributesOfItem(atPath: dir.file("queue.sqlite"))[.size] as? Int ?? 0 > 0)
        #expect(!FileManager.default.fileExists(atPath: dir.file("queue.sqlite.creating")))
        queue.close()
    }

    /// The switch to WAL mode is a rollback-journal transaction: made on the
    /// new file before the rename, a power cut while the agent first opens
    /// its queue cannot leave a hot journal that `ingestd verify` (read-only)
    /// cannot roll back (found by scripts/test-powercut-replay.sh).
    @Test func aNewQueueFileIsInWALModeBeforeItHasItsName() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("queue.sqlite")
        try EdgeIngestCore.QueueFile.prepare(path: path)
        let header = try #require(FileHandle(forReadingAtPath: path)).readData(ofLength: 20)
        #expect(Array(header[18..<20]) == [2, 2], "file format read/write versions 2: WAL")
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(left == ["queue.sqlite"], "no journal, WAL or temporary file beside it")
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        #expect(!FileManager.default.fileExists(atPath: path + "-journal"))
        queue.close()
    }

    /// The crash window the atomic creation closes, made to happen: the
    /// disk is full, so SQLite cannot write the new file's header. Creating
    /// the file in place (as before format 3) left a 0-byte queue file that
    /// the next start took for a new queue; now nothing is left at the path.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aCreationThatFailsLeavesNoEmptyQueueFile() throws {
        let small = try TemporaryDirectory()
        let sh = { (command: String) in (try? runTool("/bin/sh", ["-c", command]))?.status ?? -1 }
        try #require(sh("mount -t tmpfs -o size=256k tmpfs \(small.path)") == 0, "cannot mount a tmpfs here")
        defer { _ = sh("umount \(small.path)") }
        _ = sh("dd if=/dev/zero of=\(small.file("filler")) bs=4k 2>/dev/null")  // until the disk is full
        let configuration = QueueConfiguration(
            location: .file(path: small.file("queue.sqlite")),
            objectTypes: [try declaredWeatherSensor()]
        )
        #expect(throws: EdgeIngestError.self) { try DurableQueue.open(configuration) }
        #expect(!FileManager.default.fileExists(atPath: small.file("queue.sqlite")))
        #expect(!FileManager.default.fileExists(atPath: small.file("queue.sqlite.creating")))
        // With space again, the queue is created as usual.
        try FileManager.default.removeItem(atPath: small.file("filler"))
        let queue = try DurableQueue.open(configuration)
        #expect(try queue.statistics().queuedRecords == 0)
        queue.close()
    }

    @Test func formatTwoFileIsMigratedAndItsSegmentsStillFlow() async throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("queue.sqlite")
        let line =
            #"{"_id":"000000000000000000000001","deviceId":"WX1","temperatureInFahrenheit":1.5,"barometricPressureInHg":2.5,"windSpeedInMph":1}"#
        _ = try sqlite3(
            path,
            """
            PRAGMA journal_mode = WAL;
            CREATE TABLE segments(id INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, schema_version INTEGER NOT NULL,
              enqueued_at INTEGER NOT NULL, record_count INTEGER NOT NULL CHECK (record_count > 0), payload_bytes INTEGER NOT NULL,
              consumed INTEGER NOT NULL DEFAULT 0, consumed_bytes INTEGER NOT NULL DEFAULT 0, ids BLOB NOT NULL, payload BLOB NOT NULL);
            CREATE TABLE counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE positions(source TEXT PRIMARY KEY, position TEXT NOT NULL, updated_at INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
            CREATE TABLE dead_letters(id INTEGER PRIMARY KEY AUTOINCREMENT, record_id BLOB NOT NULL, type TEXT NOT NULL,
              schema_version INTEGER NOT NULL, enqueued_at INTEGER NOT NULL, failed_at INTEGER NOT NULL, reason TEXT NOT NULL,
              payload BLOB NOT NULL);
            INSERT INTO segments(type, schema_version, enqueued_at, record_count, payload_bytes, ids, payload)
              VALUES('WeatherSensor', 1, 1, 1, \(line.utf8.count + 1), x'000000000000000000000001', CAST('\(line)' || char(10) AS BLOB));
            INSERT INTO segments(type, schema_version, enqueued_at, record_count, payload_bytes, ids, payload)
              VALUES('WeatherSensor', 1, 1, 2, \(line.utf8.count + 1), x'000000000000000000000001000000000000000000000002', CAST('\(line)' || char(10) AS BLOB));
            INSERT INTO counters VALUES('appended_total', 3);
            PRAGMA application_id = 1162102601; PRAGMA user_version = 2;
            """
        )
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        let report = try queue.verify()
        #expect(report.segmentsWithoutChecksum == 2)
        #expect(report.damage.map(\.location) == ["segment 2"])  // declares 2 records, holds 1 line
        let lease = try #require(try queue.take(maxRecords: 10))
        #expect(String(decoding: lease.payload, as: UTF8.self) == line + "\n")
        #expect(try queue.statistics().quarantinedRecords == 2)
        #expect(try sqlite3(path, "PRAGMA user_version;").trimmingCharacters(in: .whitespacesAndNewlines) == "4")
    }

    @Test func repairCountsRecordsTheFileLostAndVerifyIsThenIntact() async throws {
        let dir = try TemporaryDirectory()
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            try await queue.append(try weatherRecords(3))
            try await queue.append(try weatherRecords(4, start: 3))
            queue.close()
        }
        _ = try sqlite3(dir.file("queue.sqlite"), "DELETE FROM segments WHERE id = 2;")
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        #expect(try queue.verify().accountingGap == 4)
        let repair = try queue.repair()
        #expect(repair.accountingCorrection == 4)
        #expect(try queue.statistics().droppedByReason["damaged"] == 4)
        #expect(try queue.verify().isIntact)
        #expect(try queue.take(maxRecords: 10)?.recordCount == 3)
    }

    @Test func damagedDeadLetterIsQuarantinedNotReplayed() async throws {
        let dir = try TemporaryDirectory()
        do {
            let queue = try DurableQueue.open(try fileConfiguration(dir))
            try await queue.append(try weatherRecords(2))
            let lease = try #require(try queue.take(maxRecords: 10))
            try queue.acknowledge(lease, deadLetters: [0: "rejected", 1: "rejected"])
            queue.close()
        }
        _ = try sqlite3(dir.file("queue.sqlite"), "UPDATE dead_letters SET reason = 'other' WHERE id = 1;")
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        #expect(try queue.verify().damage.map(\.location) == ["dead letter 1"])
        #expect(try queue.replayDeadLetters() == 1)
        let statistics = try queue.statistics()
        #expect(statistics.quarantinedRecords == 1)
        #expect(statistics.queuedRecords == 1)
        #expect(try queue.verify().isIntact)
    }

    @Test func copyLeavesDamagedSegmentsBehindInQuarantine() async throws {
        let dir = try TemporaryDirectory()
        let source = try DurableQueue.open(try fileConfiguration(dir))
        try await source.append(try weatherRecords(3))
        try await source.append(try weatherRecords(2, start: 3))
        _ = try sqlite3(dir.file("queue.sqlite"), "UPDATE segments SET enqueued_at = enqueued_at + 1 WHERE id = 2;")
        let target = try DurableQueue.open(try fileConfiguration(dir, "copy.sqlite"))
        #expect(try source.copyPending(into: target) == 3)
        #expect(try source.statistics().quarantinedRecords == 2)
        #expect(try target.statistics().queuedRecords == 3)
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
