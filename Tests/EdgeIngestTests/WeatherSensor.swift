import EdgeIngest

// The seeds' record type, verbatim.
class WeatherSensor: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var deviceId: String
    @Persisted var temperatureInFahrenheit: Float
    @Persisted var barometricPressureInHg: Float
    @Persisted var windSpeedInMph: Int
}

/// The same type as the agent declares it at run time.
func declaredWeatherSensor() throws -> RecordType {
    try RecordType(
        name: "WeatherSensor",
        fields: [
            .init(name: "_id", type: .objectId),
            .init(name: "deviceId", type: .string),
            .init(name: "temperatureInFahrenheit", type: .double),
            .init(name: "barometricPressureInHg", type: .double),
            .init(name: "windSpeedInMph", type: .int),
        ]
    )
}

/// `n` valid WeatherSensor records.
func weatherRecords(_ n: Int, device: String = "WX1278UIT", start: Int = 0) throws -> [Record] {
    let type = try declaredWeatherSensor()
    return try (start..<start + n).map { i in
        try type.validate([
            "deviceId": .string(device), "temperatureInFahrenheit": .double(66.7),
            "barometricPressureInHg": 29.65, "windSpeedInMph": .int(Int64(i)),
        ])
    }
}
