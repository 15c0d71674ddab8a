import EdgeIngest
import Foundation
import TestSupport
import Testing

/// Schema versions: records keep the version they were written with; a
/// higher version migrates them at open; a lower one is refused.
@Suite struct MigrationTests {
    // v0: windSpeedInMph. v1: renamed to windSpeed. v2: adds a required unit.
    static func type(_ version: Int) throws -> RecordType {
        var fields: [RecordType.Field] = [.init(name: "deviceId", type: .string)]
        fields.append(.init(name: version == 0 ? "windSpeedInMph" : "windSpeed", type: .int))
        if version >= 2 { fields.append(.init(name: "unit", type: .string)) }
        return try RecordType(name: "WeatherSensor", fields: fields)
    }

    static let block: MigrationBlock = { record, old in
        if old < 1 { record.renameField("windSpeedInMph", to: "windSpeed") }
        if old < 2, record["unit"] == nil { record["unit"] = "imperial" }
    }

    func open(_ dir: TemporaryDirectory, version: Int, migrate: MigrationBlock? = nil) throws -> DurableQueue {
        var configuration = QueueConfiguration(
            location: .file(path: dir.file("queue.sqlite")),
            objectTypes: [try Self.type(version)]
        )
        configuration.schemaVersion = Int64(version)
        configuration.migrationBlock = migrate
        return try DurableQueue.open(configuration)
    }

    func append(_ queue: DurableQueue, version: Int, winds: Range<Int>) async throws -> [ObjectId] {
        let type = try Self.type(version)
        let records = try winds.map { w in
            try type.validate(["deviceId": "WX1", (version == 0 ? "windSpeedInMph" : "windSpeed"): .int(Int64(w))])
        }
        try await queue.append(records)
        return records.map(\.id)
    }

    @Test func aMigrationAcrossTwoVersionsRewritesEveryPendingRecordAndKeepsIDsAndOrder() async throws {
        let dir = try TemporaryDirectory()
        var ids: [ObjectId] = []
        do {
            let v0 = try open(dir, version: 0)
            ids += try await append(v0, version: 0, winds: 0..<3)
            // One record of the first batch already uploaded: only pending records migrate.
            let lease = try #require(try v0.take(maxRecords: 1))
            try v0.acknowledge(lease)
            ids.removeFirst()
            v0.close()
        }
        do {
            // Version 1 without a migration: v0 records keep their version.
            let v1 = try open(dir, version: 1)
            ids += try await append(v1, version: 1, winds: 10..<12)
            v1.close()
        }
        let v2 = try open(dir, version: 2, migrate: Self.block)
        var lines: [String] = []
        var versions: [Int64] = []
        while let lease = try v2.take(maxRecords: 100) {
            versions += lease.segments.map(\.schemaVersion)
            lines += String(decoding: lease.payload, as: UTF8.self).split(separator: "\n").map(String.init)
            try v2.acknowledge(lease)
        }
        #expect(Set(versions) == [2])
        #expect(
            lines
                == zip(ids, [1, 2, 10, 11]).map { id, w in
                    #"{"_id":"\#(id)","deviceId":"WX1","windSpeed":\#(w),"unit":"imperial"}"#
                }
        )
    }

    @Test func aFailingMigrationAndALowerVersionChangeNothing() async throws {
        let dir = try TemporaryDirectory()
        do {
            let v0 = try open(dir, version: 0)
            _ = try await append(v0, version: 0, winds: 0..<5)
            v0.close()
        }
        let path = dir.file("queue.sqlite")
        let before = FileManager.default.contents(atPath: path)
        // A block that leaves records invalid for v2 (no unit): nothing is rewritten.
        #expect {
            try open(dir, version: 2, migrate: { record, _ in record.renameField("windSpeedInMph", to: "windSpeed") })
        } throws: { error in
            let e = error as? EdgeIngestError
            return e?.code == .migrationFailed && e?.message.contains("field 'unit'") == true
                && e?.message.contains("Nothing was changed") == true
        }
        #expect(FileManager.default.contents(atPath: path) == before)
        #expect(try open(dir, version: 0).statistics().queuedRecords == 5)

        // Migrated to 2, a queue refuses to open as 1.
        _ = try open(dir, version: 2, migrate: Self.block)
        let migrated = FileManager.default.contents(atPath: path)
        #expect { try open(dir, version: 1) } throws: { error in
            (error as? EdgeIngestError)?.message.contains(
                "holds records of schema version 2, newer than the configured 1"
            ) == true
        }
        #expect(FileManager.default.contents(atPath: path) == migrated)
    }
}
