import EdgeIngest
import Testing

@testable import IngestGateway

private func sensorType() throws -> RecordType {
    try RecordType(
        name: "WeatherSensor",
        fields: [
            .init(name: "_id", type: .objectId),
            .init(name: "deviceId", type: .string),
            .init(name: "temperatureInFahrenheit", type: .double),
            .init(name: "windSpeedInMph", type: .int),
            .init(name: "note", type: .string, isRequired: false),
        ]
    )
}

private func doorType() throws -> RecordType {
    try RecordType(name: "Door", fields: [.init(name: "doorId", type: .string), .init(name: "open", type: .bool)])
}

private let id1 = "65f1c2a9e1b2c3d4e5f60718"
private let id2 = "65f1c2a9e1b2c3d4e5f60719"
private let id3 = "65f1c2a9e1b2c3d4e5f6071a"

private func sensor(_ id: String, wind: Int = 2) -> String {
    #"{"_id":"\#(id)","deviceId":"WX1278UIT","temperatureInFahrenheit":66.7,"windSpeedInMph":\#(wind)}"#
}

/// Proves that `BatchDecoder` turns an NDJSON batch body into records of
/// the declared types, carrying the client's own `_id`s, and rejects bad
/// lines one by one with the line's index in the batch and a stable reason
/// (`missing_id`, `empty_record`, `malformed_json`, `unknown_field`, …), so
/// the client can dead-letter exactly those records.
@Suite struct BatchDecoderTests {
    /// Decodes `body` into records, and checks that the path the server
    /// takes (``BatchDecoder/encode(_:recordType:maxRecords:)``, lines
    /// stored as read) refuses the same lines and stores the same bytes.
    func decode(
        _ body: String,
        recordType: String? = "WeatherSensor"
    ) throws -> (records: [Record], rejections: [BatchDecoder.Rejection]) {
        let decoder = BatchDecoder(types: [try sensorType(), try doorType()], inputName: "http:test")
        return try Self.decodeBothWays(decoder, Array(body.utf8), recordType: recordType)
    }

    static func decodeBothWays(
        _ decoder: BatchDecoder,
        _ body: [UInt8],
        recordType: String?
    ) throws -> (records: [Record], rejections: [BatchDecoder.Rejection]) {
        let decoded = try decoder.decode(body, recordType: recordType)
        let encoded = try decoder.encode(body, recordType: recordType)
        #expect(encoded.rejections == decoded.rejections)
        let viaRecords = try EncodedBatch(records: decoded.records, types: decoder.typesByName, queueName: "test")
        #expect(encoded.batch.count == decoded.records.count)
        #expect(encoded.batch.runs.map(\.typeName) == viaRecords.runs.map(\.typeName))
        #expect(encoded.batch.runs.map(\.ids) == viaRecords.runs.map(\.ids))
        #expect(encoded.batch.runs.map(\.ends) == viaRecords.runs.map(\.ends))
        #expect(
            encoded.batch.runs.map { String(decoding: $0.payload, as: UTF8.self) }
                == viaRecords.runs.map { String(decoding: $0.payload, as: UTF8.self) }
        )
        return decoded
    }

    @Test func validLinesBecomeRecordsWithTheirOwnIDs() throws {
        let (records, rejections) = try decode(
            sensor(id1) + "\n"
                + #"{"_id":"\#(id2)","deviceId":"B","temperatureInFahrenheit":-3,"windSpeedInMph":0,"note":"gusty"}"#
                + "\n"
        )
        #expect(rejections == [])
        #expect(records.map(\.id.hexString) == [id1, id2])
        #expect(records.map(\.type.name) == ["WeatherSensor", "WeatherSensor"])
        #expect(records[0]["deviceId"] == .string("WX1278UIT"))
        #expect(records[0]["temperatureInFahrenheit"] == .double(66.7))
        #expect(records[0]["windSpeedInMph"] == .int(2))
        #expect(records[0]["note"] == nil)
        #expect(records[1]["temperatureInFahrenheit"] == .double(-3))
        #expect(records[1]["note"] == .string("gusty"))
    }

    @Test func eachBadLineIsRejectedWithItsIndexAndReason() throws {
        let lines = [
            sensor(id1),  // 0 ok
            #"{"deviceId":"WX","temperatureInFahrenheit":1,"windSpeedInMph":2}"#,  // 1
            "",  // 2
            #"{"_id":"\#(id2)","deviceId":"#,  // 3
            #"{"_id":"\#(id2)","deviceId":"WX","temperatureInFahrenheit":1,"windSpeedInMph":2,"color":"red"}"#,  // 4
            sensor(id2, wind: 7),  // 5 ok
            #"{"_id":"\#(id3)","deviceId":"WX","temperatureInFahrenheit":1,"windSpeedInMph":"fast"}"#,  // 6
            #"{"_id":"not-an-id","deviceId":"WX","temperatureInFahrenheit":1,"windSpeedInMph":2}"#,  // 7
            #"{"_id":"\#(id3)","deviceId":"WX","temperatureInFahrenheit":1}"#,  // 8
            #"{"_type":"Window","_id":"\#(id3)"}"#,  // 9
            #"{"_id":"\#(id3)","_id":"\#(id3)","deviceId":"WX","temperatureInFahrenheit":1,"windSpeedInMph":2}"#,  // 10
            "[1,2]",  // 11
        ]
        let (records, rejections) = try decode(lines.joined(separator: "\n") + "\n")
        #expect(records.map(\.id.hexString) == [id1, id2])
        #expect(records.map { $0["windSpeedInMph"] } == [.int(2), .int(7)])
        #expect(rejections.map(\.index) == [1, 2, 3, 4, 6, 7, 8, 9, 10, 11])
        #expect(
            rejections.map(\.reason) == [
                "missing_id", "empty_record", "malformed_json", "unknown_field", "type_mismatch", "invalid_object_id",
                "missing_field",
                "unknown_type", "duplicate_field", "malformed_json",
            ]
        )
    }

    @Test func rejectionMessagesSayWhatWasExpected() throws {
        let (_, rejections) = try decode(
            [
                #"{"deviceId":"WX","temperatureInFahrenheit":1,"windSpeedInMph":2}"#,
                "",
                #"{"_id":"\#(id2)","deviceId":"WX","temperatureInFahrenheit":1,"windSpeedInMph":2,"color":"red"}"#,
            ].joined(separator: "\n")
        )
        #expect(
            rejections.map(\.message) == [
                "the record has no usable '_id' (missing, null or all zeros): every record sent to the ingest protocol carries its ObjectId",
                "the line is empty; a batch has one record per line",
                "field \"color\" is not declared in record type 'WeatherSensor'",
            ]
        )
    }

    /// Lines in the record's own shape are stored as read; lines in other
    /// forms (key order, number and timestamp forms, escapes, a missing
    /// optional or default) are written again: either way exactly the
    /// bytes a decoded record encodes to, so a record's content checksum
    /// (deduplication's "same content") does not depend on the path.
    @Test func linesInAnyFormAreStoredAsTheirDecodedRecordIs() throws {
        let lines = [
            sensor(id1),
            #"{"deviceId":"WX","_id":"\#(id2)","windSpeedInMph":2,"temperatureInFahrenheit":1}"#,
            #"{"_id":"\#(id3)","deviceId":"W\u0058","temperatureInFahrenheit":66.70,"windSpeedInMph":2e0}"#,
            #"{"_id":"\#(id1.uppercased())","deviceId":"WX","temperatureInFahrenheit":-0.0,"windSpeedInMph":2,"note":null}"#,
            #"{"_id":"\#(id2)","deviceId":"é ☃ \"q\"","temperatureInFahrenheit":1E3,"windSpeedInMph":-7,"note":"n"}"#,
            #"  {"_id" : "\#(id3)" , "deviceId":"WX","temperatureInFahrenheit":1,"windSpeedInMph":2}  "#,
            #"{"_type":"Door","_id":"\#(id1)","doorId":"d","open":false}"#,
            sensor(id2, wind: 9),
        ]
        let (records, rejections) = try decode(lines.joined(separator: "\n"))
        #expect(rejections == [])
        #expect(records.count == lines.count)
    }

    @Test func theLastLineNeedsNoNewlineAndCRLFIsAccepted() throws {
        let (records, rejections) = try decode(sensor(id1) + "\r\n" + sensor(id2) + "\r\n" + sensor(id3))
        #expect(rejections == [])
        #expect(records.map(\.id.hexString) == [id1, id2, id3])
    }

    @Test func aFinalNewlineDoesNotAddALineButABlankLineAfterItDoes() throws {
        let (records, none) = try decode(sensor(id1) + "\n")
        #expect(records.count == 1)
        #expect(none == [])
        let (_, blank) = try decode(sensor(id1) + "\n\n")
        #expect(blank.map(\.index) == [1])
        #expect(blank.map(\.reason) == ["empty_record"])
    }

    @Test func anEmptyBodyHasNoRecordsAndNoRejections() throws {
        let (records, rejections) = try decode("")
        #expect(records.isEmpty)
        #expect(rejections.isEmpty)
    }

    @Test func invalidUTF8IsRejectedForItsLineOnly() throws {
        var body = Array((sensor(id1) + "\n").utf8)
        body +=
            Array(#"{"_id":"\#(id2)","deviceId":""#.utf8) + [0xC3, 0x28]
            + Array(#"","temperatureInFahrenheit":1,"windSpeedInMph":2}"#.utf8) + [0x0A]
        body += Array(sensor(id3).utf8)
        let decoder = BatchDecoder(types: [try sensorType()], inputName: "http:test")
        let (records, rejections) = try Self.decodeBothWays(decoder, body, recordType: "WeatherSensor")
        #expect(records.map(\.id.hexString) == [id1, id3])
        #expect(rejections.map(\.index) == [1])
        #expect(rejections.map(\.reason) == ["invalid_utf8"])
    }

    @Test func aRecordsOwnTypeWinsOverTheBatchType() throws {
        let body = sensor(id1) + "\n" + #"{"_type":"Door","_id":"\#(id2)","doorId":"d1","open":true}"# + "\n"
        let (records, rejections) = try decode(body, recordType: "WeatherSensor")
        #expect(rejections == [])
        #expect(records.map(\.type.name) == ["WeatherSensor", "Door"])
        #expect(records[1]["open"] == .bool(true))
        #expect(records[1].id.hexString == id2)
    }

    @Test func withoutABatchTypeEveryRecordNamesItsOwn() throws {
        let body = sensor(id1) + "\n" + #"{"_type":"Door","_id":"\#(id2)","doorId":"d1","open":false}"# + "\n"
        let (records, rejections) = try decode(body, recordType: nil)
        #expect(records.map(\.type.name) == ["Door"])
        #expect(rejections.map(\.index) == [0])
        #expect(rejections.map(\.reason) == ["missing_type"])
    }

    @Test func anUndeclaredBatchTypeIsNamedInEachRejection() throws {
        let (records, rejections) = try decode(sensor(id1) + "\n", recordType: "Window")
        #expect(records.isEmpty)
        #expect(rejections.map(\.reason) == ["unknown_type"])
        #expect(
            rejections.first?.message.contains("EdgeIngest-Record-Type \"Window\" is not declared here") == true,
            "\(rejections)"
        )
    }

    @Test func oneDecoderServesBatchesOfDifferentTypes() throws {
        var decoder = BatchDecoder(types: [try sensorType(), try doorType()], inputName: "http:test")
        let doors = try decoder.decode(Array(#"{"_id":"\#(id1)","doorId":"d1","open":true}"#.utf8), recordType: "Door")
        let sensors = try decoder.decode(Array(sensor(id2).utf8), recordType: "WeatherSensor")
        let doorsAgain = try decoder.decode(
            Array(#"{"_id":"\#(id3)","doorId":"d2","open":false}"#.utf8),
            recordType: "Door"
        )
        #expect(doors.rejections == [] && sensors.rejections == [] && doorsAgain.rejections == [])
        #expect(
            (doors.records + sensors.records + doorsAgain.records).map(\.type.name) == [
                "Door", "WeatherSensor", "Door",
            ]
        )
    }

    /// Deduplication by `_id` needs the client's id: a record whose `_id`
    /// is null must not be stored under a freshly generated id (a re-send
    /// would then be stored again), just as a record without `_id` is not.
    @Test func aNullIDIsRejectedNotReplacedByAGeneratedOne() throws {
        let body = #"{"_id":null,"deviceId":"WX","temperatureInFahrenheit":1,"windSpeedInMph":2}"#
        let first = try decode(body)
        let second = try decode(body)
        #expect(first.records.isEmpty, "accepted with the generated id \(first.records.map(\.id.hexString))")
        #expect(first.rejections.map(\.index) == [0])
        #expect(first.rejections.map(\.reason) == ["missing_id"])
        #expect(first.records.map(\.id) == second.records.map(\.id), "the same line decoded twice got different ids")
    }

    /// The all-zero ObjectId is also replaced by a generated id when
    /// building a record; received records must keep (or be refused for)
    /// the id they were sent with.
    @Test func theZeroIDIsRejectedNotReplacedByAGeneratedOne() throws {
        let body = #"{"_id":"000000000000000000000000","deviceId":"WX","temperatureInFahrenheit":1,"windSpeedInMph":2}"#
        let first = try decode(body)
        let second = try decode(body)
        #expect(first.records.map(\.id) == second.records.map(\.id), "the same line decoded twice got different ids")
        #expect(
            first.records.allSatisfy { $0.id.hexString == "000000000000000000000000" },
            "stored as \(first.records.map(\.id.hexString))"
        )
        #expect(first.records.isEmpty)
        #expect(first.rejections.map(\.reason) == ["missing_id"])
    }

    /// The server bounds a batch by its lines, counted as the decoder
    /// indexes them (a last line without newline counts): exactly `lines`
    /// pass a limit of `lines`, and a limit one lower refuses the batch.
    @Test(arguments: [("", 0), ("a", 1), ("a\n", 1), ("a\nb", 2), ("\n\n", 2), ("a\r\nb\r\n", 2)])
    func theLimitCountsLinesAsTheDecoderIndexesThem(body: String, lines: Int) throws {
        let decoder = BatchDecoder(types: [try sensorType()], inputName: "http:test")
        let atLimit = try decoder.decode(Array(body.utf8), recordType: "WeatherSensor", maxRecords: lines)
        #expect(atLimit.records.count + atLimit.rejections.count == lines)
        let decoded = try decode(body)
        #expect(decoded.records.count + decoded.rejections.count == lines)
        if lines > 0 {
            #expect(throws: BatchDecoder.TooManyRecords.self) {
                try decoder.decode(Array(body.utf8), recordType: "WeatherSensor", maxRecords: lines - 1)
            }
            #expect(throws: BatchDecoder.TooManyRecords.self) {
                try decoder.encode(Array(body.utf8), recordType: "WeatherSensor", maxRecords: lines - 1)
            }
        }
    }
}
