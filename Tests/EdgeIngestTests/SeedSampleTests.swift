import EdgeIngest
import Foundation
import TestSupport
import Testing

/// The seeds' code samples (../shared/seeds), adapted to our names, run
/// against a real loopback backend.
@Suite struct SeedSampleTests {
    @Test func createAWeatherSensorRecordAndItIsUploaded() async throws {
        let dir = try TemporaryDirectory()
        let backend = try TestBackend(["--auth"])
        let app = try makeApp(backend, dir)
        // func login() async throws -> User
        let user = try await app.login(credentials: .anonymous)
        // func openSyncedRealm(user:)
        var asymmetricConfig = user.configuration()
        asymmetricConfig.objectTypes = [WeatherSensor.self]
        let asymmetricRealm = try await IngestRealm(configuration: asymmetricConfig)
        // func useRealm(_:_:)
        try asymmetricRealm.write {
            try $0.create(
                WeatherSensor.self,
                value: [
                    "_id": ObjectId.generate(),
                    "deviceId": "WX1278UIT",
                    "temperatureInFahrenheit": 66.7,
                    "barometricPressureInHg": 29.65,
                    "windSpeedInMph": 2,
                ]
            )
        }
        // The typed variant.
        let sensor = WeatherSensor()
        sensor.deviceId = "WX1278UIT"
        sensor.temperatureInFahrenheit = 65.1
        sensor.windSpeedInMph = 4
        try await asymmetricRealm.asyncWrite { try $0.create(sensor) }
        try await asymmetricRealm.waitForUpload()
        #expect(try backend.waitForUnique(2) == 2)
        #expect(try asymmetricRealm.statistics().queuedRecords == 0)
    }

    @Test func openAnInMemoryRealmWithObjectTypes() async throws {
        let dir = try TemporaryDirectory()
        let backend = try TestBackend()
        let app = try makeApp(backend, dir)
        let user = try await app.login(credentials: .anonymous)
        var configuration = user.configuration()
        configuration.objectTypes = [WeatherSensor.self]
        configuration.inMemoryIdentifier = "seed-in-memory-\(ObjectId.generate())"
        let realm = try await IngestRealm(configuration: configuration)
        try writeSensors(realm, 3, from: 0)
        try await realm.waitForUpload()
        #expect(try backend.waitForUnique(3) == 3)
        // No file was created for it.
        #expect(!FileManager.default.fileExists(atPath: dir.file("metadata/users/\(user.id)/default.ingest.sqlite")))
    }

    @Test func theDefaultConfigurationIsUsedWhenNoneIsGiven() async throws {
        var configuration = IngestConfiguration()
        configuration.inMemoryIdentifier = "default-\(ObjectId.generate())"
        configuration.objectTypes = [WeatherSensor.self]
        let saved = IngestConfiguration.defaultConfiguration
        IngestConfiguration.defaultConfiguration = configuration
        defer { IngestConfiguration.defaultConfiguration = saved }
        let realm = try await IngestRealm()
        #expect(realm.configuration.inMemoryIdentifier == configuration.inMemoryIdentifier)
    }

    /// The seeds' `RealmActor`: a realm opened and written from an actor.
    actor SensorActor {
        var realm: IngestRealm!
        init(configuration: IngestConfiguration) async throws {
            realm = try await IngestRealm(configuration: configuration)
        }
        func createReading(deviceId: String, wind: Int) async throws {
            try await realm.asyncWrite {
                try $0.create(
                    WeatherSensor.self,
                    value: [
                        "_id": ObjectId.generate(), "deviceId": deviceId,
                        "temperatureInFahrenheit": 60.5, "barometricPressureInHg": 30.1, "windSpeedInMph": wind,
                    ]
                )
            }
        }
        var pending: Int64 { (try? realm.statistics().queuedRecords) ?? -1 }
        func close() { realm = nil }
    }

    @Test func useARealmFromAnActor() async throws {
        var configuration = IngestConfiguration()
        configuration.inMemoryIdentifier = "actor-\(ObjectId.generate())"
        configuration.objectTypes = [WeatherSensor.self]
        let sensors = try await SensorActor(configuration: configuration)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<8 { group.addTask { try await sensors.createReading(deviceId: "WX\(i)", wind: i) } }
            try await group.waitForAll()
        }
        #expect(await sensors.pending == 8)
        await sensors.close()
    }

    /// The seeds' "open a synced realm as another user" (writeCopy), as an
    /// offline box handing its queue to another: every _id reaches the
    /// backend once, even when the first box uploads its copy later.
    @Test func writeCopyForAnotherUserPreservesIDs() async throws {
        let dir = try TemporaryDirectory()
        let backend = try TestBackend()
        let frodoDir = try TemporaryDirectory()
        _ = try await makeApp(backend, frodoDir).login(credentials: .anonymous)
        do {
            // Frodo's box is offline now; its records pile up.
            let frodo = try #require(try makeApp(nil, frodoDir).currentUser)
            var frodoConfig = frodo.configuration()
            frodoConfig.objectTypes = [WeatherSensor.self]
            let frodoRealm = try await IngestRealm(configuration: frodoConfig)
            try writeSensors(frodoRealm, 3, from: 0, device: "Frodo")

            let samwise = try await makeApp(backend, dir).login(credentials: .anonymous)
            var samConfig = samwise.configuration()
            samConfig.objectTypes = [WeatherSensor.self]
            samConfig.fileURL = URL(fileURLWithPath: dir.file("copied.ingest.sqlite"))
            #expect(try frodoRealm.writeCopy(configuration: samConfig) == 3)
            let samRealm = try await IngestRealm(configuration: samConfig)
            try await samRealm.waitForUpload()
            #expect(try backend.waitForUnique(3) == 3)
            #expect(try frodoRealm.statistics().queuedRecords == 3)  // a copy, not a move

            // Copies only between configurations of the same kind.
            var local = IngestConfiguration()
            local.inMemoryIdentifier = "local-\(ObjectId.generate())"
            local.objectTypes = [WeatherSensor.self]
            #expect(throws: EdgeIngestError.self) { try frodoRealm.writeCopy(configuration: local) }
        }
        // Frodo's box comes back online and uploads its own copy: the backend
        // sees the same _ids again and stores nothing twice.
        let frodo = try #require(try makeApp(backend, frodoDir).currentUser)
        var frodoConfig = frodo.configuration()
        frodoConfig.objectTypes = [WeatherSensor.self]
        let frodoRealm = try await IngestRealm(configuration: frodoConfig)
        try await frodoRealm.waitForUpload()
        let stats = try backend.stats()
        #expect(stats["unique"] as? Int == 3)
        #expect(stats["duplicates"] as? Int == 3)
    }
}
