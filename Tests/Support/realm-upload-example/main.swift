// A short-lived program written as a Realm user writes one, with nothing
// but `import EdgeIngestRealm`: log in, write readings, wait for the
// upload, exit. Without the wait the readings would stay queued on the
// device until the next launch (docs/MIGRATING-FROM-REALM.md, "Before a
// program exits"). The tests run it against a gateway.
//
//     realm-upload-example BACKEND_URL DIRECTORY COUNT
import EdgeIngestRealm

class WeatherSensor: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var deviceId: String
    @Persisted var temperatureInFahrenheit: Float
    @Persisted var barometricPressureInHg: Float
    @Persisted var windSpeedInMph: Int
}

let arguments = CommandLine.arguments
guard arguments.count == 4, let count = Int(arguments[3]), count >= 0 else {
    print("usage: realm-upload-example BACKEND_URL DIRECTORY COUNT")
    exit(64)
}
let app = App(
    id: "weather",
    configuration: AppConfiguration(baseURL: arguments[1], metadataDirectory: arguments[2])
)
let started = Date()
do {
    let user = try await app.login(credentials: .anonymous)
    var config = user.flexibleSyncConfiguration()
    config.fileURL = URL(fileURLWithPath: arguments[2]).appendingPathComponent("readings.realm")
    config.objectTypes = [WeatherSensor.self]
    let realm = try await Realm(configuration: config)
    try realm.write {
        for i in 0..<count {
            realm.create(
                WeatherSensor.self,
                value: [
                    "_id": ObjectId.generate(), "deviceId": "WX\(i % 12)",
                    "temperatureInFahrenheit": Float.random(in: 40...90), "barometricPressureInHg": 29.65,
                    "windSpeedInMph": i,
                ]
            )
        }
    }
    try await realm.syncSession?.wait(for: .upload)
    let seconds = Date().timeIntervalSince(started)
    print("uploaded \(count) readings in \(Int(seconds * 1000)) ms")
} catch let error as NSError {
    print("failed: \(error.localizedDescription)")
    exit(1)
}
