import EdgeIngest
import Testing

@Suite struct RecordValidationTests {
    static let good: [String: RawFieldValue] = [
        "deviceId": "WX1278UIT", "temperatureInFahrenheit": 66.7, "barometricPressureInHg": 29.65, "windSpeedInMph": 2,
    ]

    static func with(_ changes: [String: RawFieldValue], removing: [String] = []) -> [String: RawFieldValue] {
        var value = good.merging(changes) { $1 }
        for key in removing { value[key] = nil }
        return value
    }

    @Test func goodReadingValidates() throws {
        let record = try declaredWeatherSensor().validate(Self.good)
        #expect(record["deviceId"] == .string("WX1278UIT"))
        #expect(record["windSpeedInMph"] == .int(2))
        #expect(record["temperatureInFahrenheit"] == .double(66.7))
    }

    @Test(
        arguments: [
            (
                with(["windSpeedInMph": "fast"]), "type_mismatch", "windSpeedInMph",
                #"field 'windSpeedInMph' must be an integer, got "fast""#
            ),
            (
                with(["windSpeedInMph": 2.5]), "type_mismatch", "windSpeedInMph",
                "field 'windSpeedInMph' must be an integer, got 2.5"
            ),
            (
                with(["windSpeedInMph": 1e30]), "out_of_range", "windSpeedInMph",
                "field 'windSpeedInMph' must be an integer within 64 bits (±9223372036854775807), got 1e+30"
            ),
            (
                with(["windSpeedInMph": .text("99999999999999999999")]), "out_of_range", "windSpeedInMph",
                #"field 'windSpeedInMph' must be an integer within 64 bits (±9223372036854775807), got "99999999999999999999""#
            ),
            (
                with(["temperatureInFahrenheit": "warm"]), "type_mismatch", "temperatureInFahrenheit",
                #"field 'temperatureInFahrenheit' must be a number, got "warm""#
            ),
            (
                with(["temperatureInFahrenheit": .double(.infinity)]), "out_of_range", "temperatureInFahrenheit",
                "field 'temperatureInFahrenheit' must be a finite number, got inf"
            ),
            (with(["deviceId": 12]), "type_mismatch", "deviceId", "field 'deviceId' must be a string, got 12"),
            (
                with(["deviceId": .unsupported("an object")]), "type_mismatch", "deviceId",
                "field 'deviceId' must be a string, got an object"
            ),
            (
                with([:], removing: ["deviceId"]), "missing_field", "deviceId",
                "field 'deviceId' is required (a string), but it is missing"
            ),
            (with(["deviceId": nil]), "missing_field", "deviceId", "field 'deviceId' is required (a string), got null"),
            (
                with(["colour": "red"]), "unknown_field", "colour",
                #"field "colour" is not declared in record type 'WeatherSensor'"#
            ),
            (
                with(["_id": "not-an-id"]), "invalid_object_id", "_id",
                #"field '_id' must be a 24-character hexadecimal ObjectId, got "not-an-id""#
            ),
            (
                with(["_id": 7]), "invalid_object_id", "_id",
                "field '_id' must be a 24-character hexadecimal ObjectId, got 7"
            ),
            (with(["deviceId": .string(String(repeating: "x", count: 500))]), "", "", ""),
        ] as [([String: RawFieldValue], String, String, String)]
    )
    func everyValidationErrorSaysWhatAndWhere(
        value: [String: RawFieldValue],
        reason: String,
        field: String,
        message: String
    ) throws {
        if reason.isEmpty {
            // Control row: a long valid string is accepted (no hidden length limit).
            _ = try declaredWeatherSensor().validate(value)
            return
        }
        let error = try #require(throws: EdgeIngestError.self) { try declaredWeatherSensor().validate(value) }
        #expect(error.code == .invalidRecord)
        #expect(error.validationFailure?.reason.description == reason)
        #expect(error.validationFailure?.field == field)
        #expect(error.message == message)
    }

    @Test func offendingValuesAreTruncatedInMessages() throws {
        let secret = String(repeating: "s3cr3t-payload-", count: 20)
        let error = try #require(throws: EdgeIngestError.self) {
            try declaredWeatherSensor().validate(Self.with(["windSpeedInMph": .string(secret)]))
        }
        #expect(error.message.count < 120)
        #expect(error.message.hasSuffix("…\""))
        #expect(!error.message.contains(secret))
    }

    @Test func duplicateFieldsAreRefused() throws {
        let pairs: [(String, RawFieldValue)] = Self.good.map { ($0.key, $0.value) } + [("deviceId", "again")]
        let error = try #require(throws: EdgeIngestError.self) { try declaredWeatherSensor().validate(pairs: pairs) }
        #expect(error.validationFailure?.reason == .duplicateField)
        #expect(error.message == "field 'deviceId' appears more than once")
    }

    @Test func csvTextIsConvertedByFieldType() throws {
        let type = try RecordType(
            name: "Mixed",
            fields: [
                .init(name: "n", type: .int), .init(name: "x", type: .double), .init(name: "ok", type: .bool),
                .init(name: "at", type: .timestamp), .init(name: "ref", type: .objectId),
                .init(name: "s", type: .string),
            ]
        )
        let record = try type.validate([
            "n": .text("-42"), "x": .text("1.5"), "ok": .text("TRUE"), "at": .text("1700000000123"),
            "ref": .text("507f1f77bcf86cd799439011"), "s": .text("12"),
        ])
        #expect(record["n"] == .int(-42))
        #expect(record["x"] == .double(1.5))
        #expect(record["ok"] == .bool(true))
        #expect(record["at"] == .timestamp(milliseconds: 1_700_000_000_123))
        #expect(record["ref"] == .objectId(try ObjectId(string: "507f1f77bcf86cd799439011")))
        #expect(record["s"] == .string("12"))
        // JSON strings are typed: "12" is not an integer.
        #expect(throws: EdgeIngestError.self) {
            try type.validate(["n": "12", "x": 1, "ok": true, "at": 0, "ref": "507f1f77bcf86cd799439011", "s": "a"])
        }
    }

    @Test func optionalFieldsAndDefaults() throws {
        let type = try RecordType(
            name: "Reading",
            fields: [
                .init(name: "value", type: .double),
                .init(name: "unit", type: .string, isRequired: false, defaultValue: .string("C")),
                .init(name: "note", type: .string, isRequired: false),
            ]
        )
        let record = try type.validate(["value": 1])
        #expect(record["unit"] == .string("C"))
        #expect(record["note"] == nil)
        #expect(record.jsonString == #"{"_id":"\#(record.id.hexString)","value":1,"unit":"C"}"#)
    }

    @Test func timestampsParseIso8601WithZoneAndEpochMilliseconds() throws {
        let type = try RecordType(name: "T", fields: [.init(name: "at", type: .timestamp)])
        func at(_ raw: RawFieldValue) throws -> FieldValue? { try type.validate(["at": raw])["at"] }
        #expect(try at("2026-11-21T11:41:55.120Z") == .timestamp(milliseconds: 1_795_261_315_120))
        #expect(try at("2026-11-21T12:41:55.12+01:00") == .timestamp(milliseconds: 1_795_261_315_120))
        #expect(try at("2026-11-21T11:41:55Z") == .timestamp(milliseconds: 1_795_261_315_000))
        #expect(try at(1_795_261_315_120) == .timestamp(milliseconds: 1_795_261_315_120))
        let record = try type.validate(["at": "2026-11-21T12:41:55.12+0100"])
        #expect(record.jsonString.hasSuffix(#""at":"2026-11-21T11:41:55.120Z"}"#))
        for bad: RawFieldValue in ["2026-11-21T11:41:55", "2026-02-30T00:00:00Z", "yesterday", true] {
            let error = try #require(throws: EdgeIngestError.self) { try type.validate(["at": bad]) }
            #expect(error.validationFailure?.reason == .invalidTimestamp)
            #expect(error.message.hasPrefix("field 'at' must be an ISO 8601 timestamp or epoch milliseconds, got"))
        }
    }

    @Test func jsonEncodingEscapesStrings() throws {
        let type = try RecordType(name: "S", fields: [.init(name: "s", type: .string)])
        let record = try type.validate(["s": "a\"b\\c\nd\u{01}é"])
        #expect(record.jsonString.hasSuffix(#""s":"a\"b\\c\nd\u0001é"}"#))
    }

    @Test(arguments: [
        (
            [RecordType.Field(name: "a", type: .int), .init(name: "a", type: .string)],
            "Record type 'X' declares field 'a' twice."
        ),
        (
            [RecordType.Field(name: "_id", type: .string)],
            "Record type 'X': the primary key '_id' must be of type objectId, not string."
        ),
        (
            [RecordType.Field(name: "_type", type: .string)],
            "Record type 'X': '_type' is reserved for naming a reading's type and cannot be a field."
        ),
        (
            [RecordType.Field(name: "a", type: .int, defaultValue: .string("x"))],
            "Record type 'X': the default of field 'a' must be of type int, not string."
        ),
    ])
    func badDeclarationsAreRefused(fields: [RecordType.Field], message: String) {
        #expect {
            try RecordType(name: "X", fields: fields)
        } throws: { error in
            (error as? EdgeIngestError)?.code == .invalidSchema && (error as? EdgeIngestError)?.message == message
        }
    }
}
