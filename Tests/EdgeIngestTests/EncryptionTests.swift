import EdgeIngest
import Foundation
import TestSupport
import Testing

/// Encryption at rest: no record value in the queue file or its WAL, and a
/// wrong or missing key leaves the file untouched.
@Suite struct EncryptionTests {
    static let key = (0..<64).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
    static let secret = "SECRET-DEVICE-7f3a9c"

    func configuration(_ dir: TemporaryDirectory, key: [UInt8]?) throws -> QueueConfiguration {
        var configuration = try fileConfiguration(dir)
        configuration.encryptionKey = key
        return configuration
    }

    /// The queue file and its WAL, as raw bytes.
    func rawBytes(_ dir: TemporaryDirectory) -> Data {
        ["", "-wal"].reduce(into: Data()) { all, suffix in
            all += FileManager.default.contents(atPath: dir.file("queue.sqlite") + suffix) ?? Data()
        }
    }

    /// A second open in the same process shares the first handle, so it
    /// must not get that handle with another key (or none).
    @Test func aSecondOpenInTheProcessWithAnotherKeyIsRefused() throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try configuration(dir, key: Self.key))
        defer { queue.close() }
        for other in [nil, Array(Self.key.reversed())] {
            #expect {
                _ = try DurableQueue.open(try configuration(dir, key: other))
            } throws: { error in
                guard let error = error as? EdgeIngestError else { return false }
                return error.code == .invalidConfiguration && error.message.contains("a different encryption key")
            }
        }
        // The same configuration gets the same handle.
        #expect(try DurableQueue.open(try configuration(dir, key: Self.key)) === queue)
    }

    @Test func noRecordValueIsInTheFileOrItsWAL() async throws {
        let dir = try TemporaryDirectory()
        do {
            let queue = try DurableQueue.open(try configuration(dir, key: Self.key))
            try await queue.append(try weatherRecords(200, device: Self.secret))
            // One record refused by the backend: dead letters are encrypted too.
            let lease = try #require(try queue.take(maxRecords: 10))
            try queue.acknowledge(lease, deadLetters: [3: "refused"])
            // Still open: the WAL holds the commits.
            #expect(!rawBytes(dir).isEmpty)
            #expect(rawBytes(dir).range(of: Data(Self.secret.utf8)) == nil)
            #expect(rawBytes(dir).range(of: Data("windSpeedInMph".utf8)) == nil)
            queue.close()
        }
        #expect(rawBytes(dir).range(of: Data(Self.secret.utf8)) == nil)
        // With the key, everything reads back.
        let queue = try DurableQueue.open(try configuration(dir, key: Self.key))
        #expect(try queue.statistics().queuedRecords == 190)
        let lines = try drain(queue)
        #expect(lines.count == 190 && lines.allSatisfy { $0.contains(Self.secret) })
        #expect(
            try queue.deadLetters().first.map { String(decoding: $0.payload, as: UTF8.self).contains(Self.secret) }
                == true
        )
    }

    @Test func aWrongOrMissingKeyIsRefusedAndTheFileIsLeftUntouched() async throws {
        let dir = try TemporaryDirectory()
        do {
            let queue = try DurableQueue.open(try configuration(dir, key: Self.key))
            try await queue.append(try weatherRecords(10))
            queue.close()
        }
        let before = rawBytes(dir)
        for index in [0, 40] {  // either half of the key
            var wrong = Self.key
            wrong[index] ^= 1
            #expect { try DurableQueue.open(try configuration(dir, key: wrong)) } throws: { error in
                let e = error as? EdgeIngestError
                return e?.code == .encryption && e?.message.contains("does not match") == true
            }
        }
        #expect { try DurableQueue.open(try configuration(dir, key: nil)) } throws: { error in
            (error as? EdgeIngestError)?.message.contains("is encrypted: open it with its 64-byte encryption key")
                == true
        }
        #expect { try DurableQueue.open(try configuration(dir, key: Array(Self.key.prefix(32)))) } throws: { error in
            (error as? EdgeIngestError)?.message.contains("it must be exactly 64") == true
        }
        #expect(rawBytes(dir) == before)
        #expect(try DurableQueue.open(try configuration(dir, key: Self.key)).statistics().queuedRecords == 10)
    }

    @Test func aQueueWithUnencryptedRecordsCannotBeGivenAKey() async throws {
        let dir = try TemporaryDirectory()
        do {
            let queue = try DurableQueue.open(try configuration(dir, key: nil))
            try await queue.append(try weatherRecords(3))
            queue.close()
        }
        let before = rawBytes(dir)
        #expect { try DurableQueue.open(try configuration(dir, key: Self.key)) } throws: { error in
            (error as? EdgeIngestError)?.message.contains("holds unencrypted records") == true
        }
        #expect(rawBytes(dir) == before)
    }

    @Test func theRealmTakesTheSeedsEncryptionKey() async throws {
        let dir = try TemporaryDirectory()
        var configuration = IngestConfiguration()
        configuration.fileURL = URL(fileURLWithPath: dir.file("queue.sqlite"))
        configuration.objectTypes = [WeatherSensor.self]
        configuration.encryptionKey = Self.key
        do {
            let realm = try await IngestRealm(configuration: configuration)
            try writeSensors(realm, 5, from: 0, device: Self.secret)
        }
        #expect(rawBytes(dir).range(of: Data(Self.secret.utf8)) == nil)
        configuration.encryptionKey = nil
        await #expect(throws: EdgeIngestError.self) { try await IngestRealm(configuration: configuration) }
    }
}
