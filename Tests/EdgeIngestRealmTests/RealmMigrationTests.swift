import EdgeIngestRealm
import Synchronization
import TestSupport
import Testing

/// The WeatherSensor of an older app version: `deviceName`, and the wind in km/h.
class WeatherSensorV0: AsymmetricObject {
    override class var recordTypeName: String { "WeatherSensor" }
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var deviceName: String
    @Persisted var temperatureInFahrenheit: Float
    @Persisted var barometricPressureInHg: Float
    @Persisted var windSpeedInKph: Int
}

/// Realm's migration block (`migration.enumerateObjects`, `renameProperty`)
/// over records queued by an older version, then uploaded to a gateway.
@Suite struct RealmMigrationTests {
    @Test func aRealmStyleMigrationBlockRewritesTheQueuedRecords() async throws {
        let gateway = try GatewayProcess(types: seedTypesTOML, schemaVersion: 1)
        let dir = try TemporaryDirectory()
        let file = URL(fileURLWithPath: dir.file("sensors.realm"))
        do {
            // Version 0 of the app queued two readings while offline (a local realm).
            // (through EdgeIngest's local queue: a Realm-shaped realm must have a user)
            let old = try await IngestRealm(
                configuration: Realm.Configuration(fileURL: file, objectTypes: [WeatherSensorV0.self])
                    .ingestConfiguration
            )
            try old.write {
                for kph in [16, 32] {
                    try $0.create(
                        WeatherSensorV0.self,
                        value: [
                            "deviceName": "WX\(kph)", "temperatureInFahrenheit": 60.5, "barometricPressureInHg": 30.1,
                            "windSpeedInKph": kph,
                        ]
                    )
                }
            }
        }
        let app = App(
            id: GatewayProcess.appID,
            configuration: AppConfiguration(baseURL: gateway.baseURL, metadataDirectory: dir.path)
        )
        let user = try await app.login(credentials: .anonymous)
        var config = user.flexibleSyncConfiguration()
        config.fileURL = file
        config.objectTypes = [WeatherSensor.self]
        config.schemaVersion = 1
        config.migrationBlock = { migration, oldSchemaVersion in
            if oldSchemaVersion < 1 {
                migration.enumerateObjects(ofType: WeatherSensor.className()) { oldObject, newObject in
                    newObject!["windSpeedInMph"] = (oldObject!["windSpeedInKph"] as! Int) * 10 / 16
                }
                migration.renameProperty(onType: WeatherSensor.className(), from: "deviceName", to: "deviceId")
            }
        }
        let realm = try await Realm(configuration: config)
        try await realm.ingestRealm.waitForUpload()
        #expect(gateway.waitUntilArchived(2) == 2, "\(gateway.stderr.suffix(2000))")
        let rows = try sqlite3(
            gateway.dir.file("archive.sqlite"),
            "SELECT deviceId, windSpeedInMph FROM WeatherSensor ORDER BY deviceId"
        )
        #expect(rows == "WX16|10\nWX32|20")
    }

    @Test func aMigrationBlockGivenToTheInitializerIsUsedToo() async throws {
        let dir = try TemporaryDirectory()
        let file = URL(fileURLWithPath: dir.file("sensors.realm"))
        do {
            // (through EdgeIngest's local queue: a Realm-shaped realm must have a user)
            let old = try await IngestRealm(
                configuration: Realm.Configuration(fileURL: file, objectTypes: [WeatherSensorV0.self])
                    .ingestConfiguration
            )
            try old.write {
                try $0.create(
                    WeatherSensorV0.self,
                    value: [
                        "deviceName": "WX", "temperatureInFahrenheit": 1.5, "barometricPressureInHg": 30.1,
                        "windSpeedInKph": 8,
                    ]
                )
            }
        }
        let migrated = Mutex<[UInt64]>([])
        var config = Realm.Configuration(
            fileURL: file,
            schemaVersion: 1,
            migrationBlock: { migration, oldSchemaVersion in
                migrated.withLock { $0.append(oldSchemaVersion) }
                migration.renameProperty(onType: "WeatherSensor", from: "deviceName", to: "deviceId")
                migration.renameProperty(onType: "WeatherSensor", from: "windSpeedInKph", to: "windSpeedInMph")
            },
            objectTypes: [WeatherSensor.self]
        )
        // The shared user's session; the record stays queued while the test looks.
        config.ingestConfiguration.user = try await SyncedRealmFixture.shared.configuration().syncConfiguration?.user
        config.ingestConfiguration.upload.lingerMilliseconds = 60_000
        let realm = try await Realm(configuration: config)
        #expect(try realm.ingestRealm.statistics().queuedRecords == 1)
        #expect(migrated.withLock { $0 } == [0])  // once, for the one queued record
    }
}
