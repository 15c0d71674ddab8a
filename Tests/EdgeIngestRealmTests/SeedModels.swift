import EdgeIngestRealm

// The seeds' object types, declared as AsymmetricObjects (write-only data).
// WeatherSensor is the Data Ingest page's, verbatim; the others are named
// by the other pages' samples, which do not show their declarations.
// Declaring `Task` shadows Swift's Task in this test module, as it did in
// Realm's own docs: write `_Concurrency.Task` for the other.

class WeatherSensor: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var deviceId: String
    @Persisted var temperatureInFahrenheit: Float
    @Persisted var barometricPressureInHg: Float
    @Persisted var windSpeedInMph: Int
}

class Task: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var name: String
}

class Team: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var name: String
}

class FlexibleSync_Task: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var name: String
}

class FlexibleSync_Team: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var name: String
}

class Dog: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var name: String
}

/// The gateway's declarations of the types above.
let seedTypesTOML = """
    [types.WeatherSensor]
    deviceId = "string"
    temperatureInFahrenheit = "double"
    barometricPressureInHg = "double"
    windSpeedInMph = "int"

    [types.Task]
    name = "string"

    [types.Team]
    name = "string"

    [types.FlexibleSync_Task]
    name = "string"

    [types.FlexibleSync_Team]
    name = "string"
    """
