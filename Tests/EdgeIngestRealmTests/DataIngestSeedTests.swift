import EdgeIngestRealm
import TestSupport
import Testing

@Suite struct DataIngestSeedTests {
    @Test func theDataIngestPageStreamsAWeatherSensorReadingToTheGateway() async throws {
        let gateway = try GatewayProcess(types: seedTypesTOML)
        let metadata = try TemporaryDirectory()
        await DataIngestSample(appID: GatewayProcess.appID, backend: gateway.baseURL, metadata: metadata.path).run()
        // The realm was released at the end of useRealm: its final drain uploaded the reading.
        #expect(gateway.waitUntilArchived(1) == 1, "\(gateway.stderr.suffix(2000))")
        let row = try sqlite3(
            gateway.dir.file("archive.sqlite"),
            "SELECT deviceId, temperatureInFahrenheit, windSpeedInMph FROM WeatherSensor"
        )
        #expect(row == "WX1278UIT|66.7|2")
        // The reading left the device once confirmed: nothing is queued in the user's file.
        let app = App(
            id: GatewayProcess.appID,
            configuration: AppConfiguration(baseURL: gateway.baseURL, metadataDirectory: metadata.path)
        )
        let user = try #require(app.currentUser)
        var configuration = user.flexibleSyncConfiguration()
        configuration.objectTypes = [WeatherSensor.self]
        #expect(FileManager.default.fileExists(atPath: configuration.fileURL!.path))
        let realm = try await Realm(configuration: configuration)
        #expect(try realm.ingestRealm.statistics().queuedRecords == 0)
    }

    static func reading(wind: Any) -> [String: Any] {
        ["deviceId": "WX", "temperatureInFahrenheit": 60.5, "barometricPressureInHg": 30.1, "windSpeedInMph": wind]
    }

    @Test func aValueThatDoesNotFitFailsTheWriteAndStoresNothing() async throws {
        let realm = try await Realm(configuration: SyncedRealmFixture.shared.configuration())
        #expect {
            try realm.write {
                realm.create(WeatherSensor.self, value: Self.reading(wind: 1))
                realm.create(WeatherSensor.self, value: Self.reading(wind: "fast"))
            }
        } throws: { error in
            // Says which field and what was expected, and is catchable as an NSError.
            let message = (error as NSError).localizedDescription
            return message.contains("windSpeedInMph") && message.contains("int")
        }
        #expect(try realm.ingestRealm.statistics().appendedTotal == 0)
        #expect(!realm.isInWriteTransaction)
        // A write inside a write is refused, not a deadlock.
        #expect(throws: Realm.Error.self) {
            try realm.write { try realm.write {} }
        }
    }
}

/// Two `Realm`s on one file are one realm, as in Realm: a record created
/// through either inside the other's write belongs to that write.
@Suite struct SharedFileTests {
    @Test func twoRealmsOnOneFileShareTheirWriteTransaction() async throws {
        var config = try await SyncedRealmFixture.shared.configuration()
        config.ingestConfiguration.upload.lingerMilliseconds = 60_000  // the count stays put while the test looks
        let first = try await Realm(configuration: config)
        let second = try await Realm(configuration: config)
        try first.write {
            #expect(second.isInWriteTransaction)
            second.create(WeatherSensor.self, value: DataIngestSeedTests.reading(wind: 1))
            first.create(WeatherSensor.self, value: DataIngestSeedTests.reading(wind: 2))
        }
        #expect(try first.ingestRealm.statistics().queuedRecords == 2)
        // A write inside a write through the other handle is refused too.
        #expect(throws: Realm.Error.self) { try first.write { try second.write {} } }
    }

    @Test func appsAreOneOnlyWithTheSameSettings() throws {
        let dir = try TemporaryDirectory()
        let plain = AppConfiguration(baseURL: "http://127.0.0.1:9", metadataDirectory: dir.path)
        var pinned = plain
        pinned.http.caFile = dir.file("ca.pem")
        let first = try App(id: "weather", configuration: plain).ingestApp()
        #expect(try App(id: "weather", configuration: plain).ingestApp() === first)
        #expect(try App(id: "weather", configuration: pinned).ingestApp() !== first)
        #expect(try App(id: "other", configuration: plain).ingestApp() !== first)
    }
}
