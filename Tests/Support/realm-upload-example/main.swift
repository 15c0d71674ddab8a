// A short-lived program written as a Realm user writes one, with nothing
// but `import EdgeIngestRealm`: log in, write readings, wait for the
// upload, exit. The realm is a top-level `let`, held until the process
// exits, so it is never released and its final upload never runs: without
// the wait the readings would stay on the device until the next launch
// (docs/MIGRATING-FROM-REALM.md, "Before a program exits"). Its batches
// linger up to a minute for more readings, as a battery-minded app's may:
// the wait is what sends them. The tests run it against a gateway.
//
//     realm-upload-example BACKEND_URL DIRECTORY COUNT [--no-wait]
import EdgeIngestRealm

class WeatherSensor: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var deviceId: String
    @Persisted var temperatureInFahrenheit: Float
    @Persisted var barometricPressureInHg: Float
    @Persisted var windSpeedInMph: Int
}

let arguments = CommandLine.arguments
guard arguments.count >= 4, let count = Int(arguments[3]), count >= 0 else {
    print("usage: realm-upload-example BACKEND_URL DIRECTORY COUNT [--no-wait]")
    exit(64)
}
let waits = !arguments.dropFirst(4).contains("--no-wait")
let app = App(
    id: "weather",
    configuration: AppConfiguration(baseURL: arguments[1], metadataDirectory: arguments[2])
)
let started = Date()
let realm: Realm
do {
    let user = try await app.login(credentials: .anonymous)
    var config = user.flexibleSyncConfiguration()
    config.fileURL = URL(fileURLWithPath: arguments[2]).appendingPathComponent("readings.realm")
    config.objectTypes = [WeatherSensor.self]
    config.ingestConfiguration.upload.maxRecords = 10_000
    config.ingestConfiguration.upload.lingerMilliseconds = 60_000
    realm = try await Realm(configuration: config)
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
    if waits { try await realm.syncSession?.wait(for: .upload) }
} catch let error as NSError {
    print("failed: \(error.localizedDescription)")
    exit(1)
}
let milliseconds = Int(Date().timeIntervalSince(started) * 1000)
print(waits ? "uploaded \(count) readings in \(milliseconds) ms" : "wrote \(count) readings; exiting without waiting")
