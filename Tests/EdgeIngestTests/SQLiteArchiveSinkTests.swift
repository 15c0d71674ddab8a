import Foundation
import TestSupport
import Testing

@testable import EdgeIngestCore

/// The SQLite archive sink against a real SQLite file, read back with the
/// sqlite3 tool an operator would use.
struct SQLiteArchiveSinkTests {
    static func batch(_ records: [Record], key: String = "k") -> SinkBatch {
        var payload: [UInt8] = []
        for record in records {
            record.encodeJSON(into: &payload)
            payload.append(UInt8(ascii: "\n"))
        }
        return SinkBatch(
            type: "WeatherSensor",
            idempotencyKey: key,
            payload: payload[...],
            recordCount: records.count,
            headers: []
        )
    }

    @Test func recordsLandInATypedTableOncePerId() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("archive.sqlite")
        let sink = SQLiteArchiveSink(path: path, types: [try declaredWeatherSensor()])
        let records = try weatherRecords(10)
        #expect(sink.deliver(Self.batch(Array(records[0..<6]))) == .stored(rejected: []))
        // The same records again (a lost acknowledgement), overlapping new ones.
        #expect(sink.deliver(Self.batch(Array(records[3..<10]))) == .stored(rejected: []))
        #expect(sink.storedCount == 10)
        #expect(sink.duplicateCount == 3)
        #expect(try sqlite3(path, "SELECT count(*), count(DISTINCT _id) FROM WeatherSensor") == "10|10")
        #expect(try sqlite3(path, "SELECT _id FROM WeatherSensor ORDER BY rowid LIMIT 1") == records[0].id.hexString)
        #expect(
            try sqlite3(
                path,
                "SELECT deviceId, typeof(temperatureInFahrenheit), windSpeedInMph FROM WeatherSensor WHERE windSpeedInMph = 7"
            )
                == "WX1278UIT|real|7"
        )
        #expect(try sqlite3(path, "PRAGMA journal_mode") == "wal")
    }

    /// With an owner field the key is (owner, `_id`): two accounts' records
    /// under one `_id` are both kept, each account's re-send once; a
    /// record without an owner is kept under ''; an archive whose table is
    /// keyed on `_id` alone holds and says so.
    @Test func anOwnerFieldKeysTheTableWithTheID() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("archive.sqlite")
        let type = try RecordType(
            name: "WeatherSensor",
            fields: try declaredWeatherSensor().fields + [.init(name: "owner_id", type: .string, isRequired: false)]
        )
        let sink = SQLiteArchiveSink(path: path, types: [type], ownerField: "owner_id")
        let id = try weatherRecords(1)[0].id
        func record(_ owner: String?, _ device: String) throws -> Record {
            var values: [String: Any] = [
                "_id": id, "deviceId": device, "temperatureInFahrenheit": 1.5, "barometricPressureInHg": 2,
                "windSpeedInMph": 3,
            ]
            if let owner { values["owner_id"] = owner }
            return try type.validate(anyValues: values)
        }
        let batch = [try record("key-a", "A"), try record("key-b", "B"), try record(nil, "N")]
        #expect(sink.deliver(Self.batch(batch)) == .stored(rejected: []))
        #expect(sink.deliver(Self.batch(batch)) == .stored(rejected: []))
        #expect(sink.storedCount == 3 && sink.duplicateCount == 3)
        #expect(
            try sqlite3(
                path,
                "SELECT group_concat(owner_id || '=' || deviceId, ',') FROM (SELECT * FROM WeatherSensor ORDER BY owner_id)"
            )
                == "=N,key-a=A,key-b=B"
        )
        let other = dir.file("old-archive.sqlite")
        #expect(SQLiteArchiveSink(path: other, types: [type]).deliver(Self.batch([batch[0]])) == .stored(rejected: []))
        guard
            case .hold(let reason) = SQLiteArchiveSink(path: other, types: [type], ownerField: "owner_id").deliver(
                Self.batch(batch)
            )
        else {
            Issue.record("an archive keyed on _id alone must hold")
            return
        }
        #expect(reason.contains("keyed on (_id), not (owner_id, _id)"), "\(reason)")
    }

    @Test func aFieldAddedLaterBecomesANewColumn() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("archive.sqlite")
        let old = SQLiteArchiveSink(path: path, types: [try declaredWeatherSensor()])
        #expect(old.deliver(Self.batch(try weatherRecords(2))) == .stored(rejected: []))
        let wider = try RecordType(
            name: "WeatherSensor",
            fields: try declaredWeatherSensor().fields + [.init(name: "site", type: .string, isRequired: false)]
        )
        let record = try wider.validate([
            "deviceId": "A", "temperatureInFahrenheit": 1.5, "barometricPressureInHg": 2, "windSpeedInMph": 3,
            "site": "north",
        ])
        let new = SQLiteArchiveSink(path: path, types: [wider])
        #expect(new.deliver(Self.batch([record])) == .stored(rejected: []))
        #expect(try sqlite3(path, "SELECT count(*), count(site), max(site) FROM WeatherSensor") == "3|1|north")
    }

    @Test func aRecordThatIsNotJSONIsABadBatchSoTheUploaderIsolatesIt() throws {
        let dir = try TemporaryDirectory()
        let sink = SQLiteArchiveSink(path: dir.file("archive.sqlite"), types: [try declaredWeatherSensor()])
        var batch = Self.batch(try weatherRecords(2))
        batch.payload = (Array(batch.payload) + Array("{not json\n".utf8))[...]
        batch.recordCount = 3
        guard case .badBatch(let reason) = sink.deliver(batch) else {
            Issue.record("expected a bad batch")
            return
        }
        #expect(reason.contains("record 2"))
        // Nothing of a refused batch is stored: the uploader bisects it.
        #expect(sink.storedCount == 0)
    }

    @Test func anUndeclaredTypeHoldsAndSaysWhich() throws {
        let dir = try TemporaryDirectory()
        let sink = SQLiteArchiveSink(path: dir.file("archive.sqlite"), types: [try declaredWeatherSensor()])
        var batch = Self.batch(try weatherRecords(1))
        batch.type = "Thermostat"
        guard case .hold(let reason) = sink.deliver(batch) else {
            Issue.record("expected a hold")
            return
        }
        #expect(reason.contains("'Thermostat'"))
    }

    @Test func anUnwritableArchiveIsRetriedWithAReasonAndWorksOnceFixed() throws {
        let dir = try TemporaryDirectory()
        let blocked = dir.file("missing-directory")
        let sink = SQLiteArchiveSink(path: blocked + "/archive.sqlite", types: [try declaredWeatherSensor()])
        guard case .retry(let reason, _) = sink.deliver(Self.batch(try weatherRecords(1))) else {
            Issue.record("expected a retry")
            return
        }
        #expect(reason.contains("Cannot open the archive"), "\(reason)")
        try FileManager.default.createDirectory(atPath: blocked, withIntermediateDirectories: false)
        #expect(sink.deliver(Self.batch(try weatherRecords(1))) == .stored(rejected: []))
    }

    @Test func aDamagedArchiveHoldsInsteadOfRetrying() throws {
        let dir = try TemporaryDirectory()
        let path = dir.file("archive.sqlite")
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: path))
        let sink = SQLiteArchiveSink(path: path, types: [try declaredWeatherSensor()])
        guard case .hold(let reason) = sink.deliver(Self.batch(try weatherRecords(1))) else {
            Issue.record("expected a hold")
            return
        }
        #expect(reason.contains("archive file"), "\(reason)")
        #expect(reason.contains("not a database"), "\(reason)")
    }
}
