import EdgeIngest
import Testing

@Suite struct AsymmetricObjectTests {
    @Test func seedWeatherSensorDeclaresItsRecordType() throws {
        let type = try WeatherSensor.recordType()
        #expect(type.name == "WeatherSensor")
        #expect(
            type.fields.map(\.name) == [
                "deviceId", "temperatureInFahrenheit", "barometricPressureInHg", "windSpeedInMph",
            ]
        )
        #expect(type.fields.map(\.type) == [.string, .double, .double, .int])
        #expect(type.fields.allSatisfy { $0.isRequired })
        #expect(type == (try declaredWeatherSensor()))
    }

    @Test func seedCreateValueDictionaryBecomesARecord() throws {
        // The seeds' `create(WeatherSensor.self, value: [...])` body.
        let id = ObjectId.generate()
        let record = try WeatherSensor.makeRecord(value: [
            "_id": id,
            "deviceId": "WX1278UIT",
            "temperatureInFahrenheit": 66.7,
            "barometricPressureInHg": 29.65,
            "windSpeedInMph": 2,
        ])
        #expect(record.id == id)
        #expect(
            record.jsonString
                == #"{"_id":"\#(id.hexString)","deviceId":"WX1278UIT","temperatureInFahrenheit":66.7,"barometricPressureInHg":29.65,"windSpeedInMph":2}"#
        )
    }

    @Test func typedInstanceBecomesARecordWithFloatsAsWritten() throws {
        let sensor = WeatherSensor()
        sensor.deviceId = "WX1"
        sensor.temperatureInFahrenheit = 66.7
        sensor.barometricPressureInHg = 29.65
        sensor.windSpeedInMph = 3
        let record = try sensor.makeRecord()
        #expect(!record.id.isZero)  // generated for the zero default
        #expect(record["temperatureInFahrenheit"] == .double(66.7))
        #expect(record["windSpeedInMph"] == .int(3))
    }

    final class Annotated: AsymmetricObject {
        @Persisted(primaryKey: true) var _id: ObjectId
        @Persisted var note: String?
        @Persisted var count: Int64 = 5
    }

    @Test func optionalPropertiesAreOptionalFields() throws {
        let type = try Annotated.recordType()
        #expect(type.fields.map(\.isRequired) == [false, true])
        let record = try Annotated().makeRecord()
        #expect(record["note"] == nil)
        #expect(record["count"] == .int(5))
        #expect(!record.jsonString.contains("note"))
    }

    final class WrongKey: AsymmetricObject {
        @Persisted(primaryKey: true) var serial: String
    }

    @Test func aPrimaryKeyOtherThanIdIsRefused() {
        #expect {
            try WrongKey.recordType()
        } throws: { error in
            (error as? EdgeIngestError)?.message
                == "WrongKey: only '_id' (an ObjectId) can be the primary key, not 'serial'."
        }
    }
}
