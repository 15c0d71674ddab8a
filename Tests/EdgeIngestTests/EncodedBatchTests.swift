import TestSupport
import Testing

@testable import EdgeIngestCore

/// The agent's path for readings: a reusable ``RecordBuilder`` finishing
/// straight into an ``EncodedBatch``, with no ``Record`` per reading. It must
/// store exactly what the ``Record`` path stores.
@Suite struct EncodedBatchTests {
    static func noteType() throws -> RecordType {
        try RecordType(
            name: "Note",
            fields: [
                .init(name: "text", type: .string),
                .init(name: "level", type: .int, defaultValue: .int(3)),
                .init(name: "tag", type: .string, isRequired: false),
            ]
        )
    }

    @Test func builderBatchesStoreWhatRecordsStore() async throws {
        let sensor = try declaredWeatherSensor()
        let note = try EncodedBatchTests.noteType()
        let readings: [(RecordType, [String: RawFieldValue])] = [
            (
                sensor,
                [
                    "deviceId": "a", "temperatureInFahrenheit": 66.7, "barometricPressureInHg": 29.65,
                    "windSpeedInMph": 2,
                    "_id": "5f1a2b3c4d5e6f7a8b9c0d1e",
                ]
            ),
            (
                sensor,
                [
                    "deviceId": "b\"\n", "temperatureInFahrenheit": -0.5, "barometricPressureInHg": 30,
                    "windSpeedInMph": 0,
                    "_id": "5f1a2b3c4d5e6f7a8b9c0d1f",
                ]
            ),
            (note, ["text": "defaults", "_id": "5f1a2b3c4d5e6f7a8b9c0d20"]),  // level defaulted, tag left out
            (note, ["text": "all", "level": 9, "tag": "x", "_id": "5f1a2b3c4d5e6f7a8b9c0d21"]),
            (
                sensor,
                [
                    "deviceId": "c", "temperatureInFahrenheit": 1e21, "barometricPressureInHg": 0.1,
                    "windSpeedInMph": 7,
                    "_id": "5f1a2b3c4d5e6f7a8b9c0d22",
                ]
            ),
        ]
        var batch = EncodedBatch(expectedRecords: 4)
        var builders: [String: RecordBuilder] = [:]
        for (type, values) in readings {
            var builder = builders[type.name] ?? RecordBuilder(type: type)
            for (key, value) in values {
                if key == "_id" {
                    try builder.setID(value)
                } else {
                    try builder.set(field: try #require(type.fieldIndex(named: key)), value)
                }
            }
            try builder.finish(into: &batch)
            builders[type.name] = builder
        }
        let records = try readings.map { try $0.0.validate($0.1) }
        #expect(batch.count == records.count)
        #expect(batch.runs.map(\.typeName) == ["WeatherSensor", "Note", "WeatherSensor"])

        let dir = try TemporaryDirectory()
        let types = [sensor, note]
        let viaBatch = try DurableQueue.open(
            QueueConfiguration(location: .file(path: dir.file("a.sqlite")), objectTypes: types)
        )
        let viaRecords = try DurableQueue.open(
            QueueConfiguration(location: .file(path: dir.file("b.sqlite")), objectTypes: types)
        )
        try await viaBatch.append(batch)
        try await viaRecords.append(records)
        let stored = try drain(viaBatch)
        #expect(stored == records.map(\.jsonString))
        #expect(stored == (try drain(viaRecords)))
    }

    /// Found in review: each run reserved a whole commit's worth, so with
    /// alternating types (every record a new run) a 1000-record commit
    /// reserved ~160 MB. Only the first run reserves; the rest grow.
    @Test func alternatingTypesReserveAboutWhatTheyHold() throws {
        let sensor = try declaredWeatherSensor()
        let note = try EncodedBatchTests.noteType()
        var batch = EncodedBatch(expectedRecords: 1000)
        var sensors = RecordBuilder(type: sensor)
        var notes = RecordBuilder(type: note)
        for i in 0..<1000 {
            if i % 2 == 0 {
                try sensors.set(field: 0, .string("d\(i)"))
                try sensors.set(field: 1, .double(1.5))
                try sensors.set(field: 2, .double(29.9))
                try sensors.set(field: 3, .int(Int64(i)))
                try sensors.finish(into: &batch)
            } else {
                try notes.set(field: 0, .string("n\(i)"))
                try notes.finish(into: &batch)
            }
            #expect(batch.count == i + 1)
        }
        #expect(batch.runs.count == 1000)
        let held = batch.runs.reduce(0) { $0 + $1.payload.count }
        let reserved = batch.runs.reduce(0) { $0 + $1.payload.capacity }
        // The first run's reservation (160 bytes × 1000) plus each later run's own growth.
        #expect(reserved <= 160 * 1000 + 4 * held, "reserved \(reserved) bytes for \(held)")
        let kept = batch.removing([0, 1, 2])
        #expect(kept.count == 997 && kept.runs.reduce(0) { $0 + $1.count } == 997)
    }

    /// A commit of 4,000 readings of ~175 bytes outgrew the 160 bytes a
    /// record it reserved: its buffer doubled near the end (a copy, and
    /// twice the room held while it was committed). A batch sized by the
    /// last one's average holds a commit like it in its first buffer.
    @Test func aBatchSizedByTheLastOneHoldsACommitLikeItWithoutGrowing() throws {
        let sensor = try declaredWeatherSensor()
        func fill(_ batch: inout EncodedBatch) throws {
            var sensors = RecordBuilder(type: sensor)
            for i in 0..<1000 {
                try sensors.set(field: 0, .string("a device with a longer name than 160 bytes allow, no. \(i % 7)"))
                try sensors.set(field: 1, .double(Double(i % 97) + 0.25))
                try sensors.set(field: 2, .double(29.5 + Double(i % 13) / 100))
                try sensors.set(field: 3, .int(Int64(i % 45)))
                try sensors.finish(into: &batch)
            }
        }
        var first = EncodedBatch(expectedRecords: 1000)
        try fill(&first)
        let held = first.runs[0].payload.count
        #expect(held > 160 * 1000, "the records must outgrow the default guess for this test to mean anything")
        #expect(first.runs[0].payload.capacity >= 2 * 160 * 1000, "the default guess grew by doubling")
        let average = try #require(first.nextExpectedRecordBytes)
        #expect(average * 1000 >= held && average * 1000 < held + held / 16)

        var next = EncodedBatch(expectedRecords: 1000, expectedRecordBytes: average)
        try fill(&next)
        #expect(next.runs[0].payload.count == held)
        let reserved = next.runs[0].payload.capacity
        #expect(reserved < held + held / 8, "reserved \(reserved) for \(held)")
        #expect(EncodedBatch().nextExpectedRecordBytes == nil)
    }

    /// A batch of a few very long lines must not make the next one
    /// reserve a commit's worth of them.
    @Test func theGuessOfARecordsSizeIsBounded() throws {
        let note = try EncodedBatchTests.noteType()
        var batch = EncodedBatch(expectedRecords: 1000, expectedRecordBytes: 1_000_000)
        var notes = RecordBuilder(type: note)
        try notes.set(field: 0, "short")
        try notes.finish(into: &batch)
        #expect(batch.runs[0].payload.capacity < 2 * 1024 * 1000)
    }

    @Test func aFailedRecordLeavesNothingBehindInTheBuilderOrTheBatch() throws {
        let note = try EncodedBatchTests.noteType()
        var batch = EncodedBatch()
        var builder = RecordBuilder(type: note)
        try builder.set(field: 2, "left over?")
        #expect(throws: EdgeIngestError.self) { try builder.finish(into: &batch) }  // 'text' is required
        #expect(batch.isEmpty)
        try builder.set(field: 0, "next")  // not "appears more than once"
        try builder.finish(into: &batch)
        let queueLine = String(decoding: batch.runs[0].payload, as: UTF8.self)
        #expect(queueLine.hasSuffix(#","text":"next","level":3}"# + "\n"))  // no 'tag' from the failed record
    }

    @Test func aQueueRefusesABatchOfATypeItDoesNotHold() async throws {
        let dir = try TemporaryDirectory()
        let queue = try DurableQueue.open(try fileConfiguration(dir))
        var batch = EncodedBatch()
        var builder = RecordBuilder(type: try EncodedBatchTests.noteType())
        try builder.set(field: 0, "x")
        try builder.finish(into: &batch)
        await #expect(throws: EdgeIngestError.self) { try await queue.append(batch) }
        #expect(try queue.statistics().queuedRecords == 0)
    }

    /// Acknowledged records are deleted without their own fsync; the
    /// connection must be back at synchronous=FULL for the next append, also
    /// after a failed acknowledgement.
    @Test func deletesRunWithoutSyncAndAppendsSyncAgain() throws {
        let dir = try TemporaryDirectory()
        let store = try QueueStore(
            db: SQLiteConnection(path: dir.file("q.sqlite"), displayName: "q"),
            isFile: true,
            durability: .powerLossSafe
        )
        #expect(try store.db.integer("PRAGMA synchronous") == 2)
        #expect(try store.db.integer("PRAGMA secure_delete") == 2)  // FAST: acknowledged pages are not rewritten
        let inside = try store.withoutSync { try store.db.integer("PRAGMA synchronous") }
        #expect(inside == 1)
        #expect(try store.db.integer("PRAGMA synchronous") == 2)
        struct Boom: Error {}
        #expect(throws: Boom.self) { try store.withoutSync { throw Boom() } }
        #expect(try store.db.integer("PRAGMA synchronous") == 2)

        let crashSafe = try QueueStore(
            db: SQLiteConnection(path: dir.file("c.sqlite"), displayName: "c"),
            isFile: true,
            durability: .crashSafe
        )
        #expect(try crashSafe.withoutSync { try crashSafe.db.integer("PRAGMA synchronous") } == 1)
        #expect(try crashSafe.db.integer("PRAGMA synchronous") == 1)  // never raised to FULL
    }
}
