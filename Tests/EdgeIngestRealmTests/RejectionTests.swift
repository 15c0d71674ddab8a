import EdgeIngestRealm
import Synchronization
import TestSupport
import Testing

/// The app's WeatherSensor with an optional `deviceId`, which the gateway
/// requires: a reading without one passes on the device and is refused
/// by the backend, record by record.
class LooseWeatherSensor: AsymmetricObject {
    override class var recordTypeName: String { "WeatherSensor" }
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var deviceId: String?
    @Persisted var temperatureInFahrenheit: Double
    @Persisted var barometricPressureInHg: Double
    @Persisted var windSpeedInMph: Int
}

/// What happens to a record the backend refuses, and to a repeated `_id`,
/// as the app sees it: an error at write time, the sync error handler,
/// the dead-letter methods.
@Suite struct RejectionTests {
    static func reading(_ i: Int, id: ObjectId = .generate(), device: String? = "WX") -> [String: Any] {
        var value: [String: Any] = [
            "_id": id, "temperatureInFahrenheit": 60.5, "barometricPressureInHg": 30.1, "windSpeedInMph": i,
        ]
        if let device { value["deviceId"] = device }
        return value
    }

    @Test func aRepeatedIDIsRefusedAtWriteTimeLikeAPrimaryKeyAndNothingOfTheWriteIsStored() async throws {
        let realm = try await Realm(configuration: SyncedRealmFixture.shared.configuration())
        let taken = ObjectId.generate()
        try realm.write { realm.create(WeatherSensor.self, value: Self.reading(1, id: taken)) }
        let fresh = ObjectId.generate()
        #expect {
            try realm.write {
                realm.create(WeatherSensor.self, value: Self.reading(2, id: fresh))
                realm.create(WeatherSensor.self, value: Self.reading(3, id: taken))
            }
        } throws: { error in
            guard let error = error as? Realm.Error, error.ingestCode == .duplicateID else { return false }
            let info = error.compensatingWriteInfo?.first
            return info?.primaryKey == taken && info?.objectType == "WeatherSensor"
                && error.localizedDescription.contains("\(taken)") && error.localizedDescription.contains("nothing")
        }
        // Twice in one write is the same mistake.
        let twice = ObjectId.generate()
        #expect(throws: Realm.Error.self) {
            try realm.write {
                realm.create(WeatherSensor.self, value: Self.reading(4, id: twice))
                realm.create(WeatherSensor.self, value: Self.reading(5, id: twice))
            }
        }
        #expect(try realm.ingestRealm.statistics().appendedTotal == 1)
        // The refused writes' other ids were not kept: they can be written now.
        try realm.write {
            realm.create(WeatherSensor.self, value: Self.reading(2, id: fresh))
            realm.create(WeatherSensor.self, value: Self.reading(4, id: twice))
        }
        // Uploaded and gone from the queue, the id is still remembered.
        try await withDeadline(seconds: 60) { try await realm.syncSession?.wait(for: .upload) }
        #expect(try realm.ingestRealm.statistics().queuedRecords == 0)
        #expect(throws: Realm.Error.self) {
            try realm.write { realm.create(WeatherSensor.self, value: Self.reading(6, id: taken)) }
        }
        #expect(try realm.ingestRealm.statistics().appendedTotal == 3)
    }

    @Test func recordsTheBackendRefusesReachTheErrorHandlerAndTheDeadLetterMethods() async throws {
        try await withProcessWideState {
            let gateway = try GatewayProcess(types: seedTypesTOML)
            let dir = try TemporaryDirectory()
            let app = App(
                id: GatewayProcess.appID,
                configuration: AppConfiguration(baseURL: gateway.baseURL, metadataDirectory: dir.path)
            )
            let user = try await app.login(credentials: .anonymous)
            let reported = Mutex<[CompensatingWriteInfo]>([])
            app.syncManager.errorHandler = { error, session in
                guard let error = error as? Realm.Error, error.ingestCode == .recordRejected,
                    session?.parentUser()?.id == user.id
                else { return }
                reported.withLock { $0 += error.compensatingWriteInfo ?? [] }
            }
            defer { app.syncManager.errorHandler = nil }
            var config = user.flexibleSyncConfiguration()
            config.objectTypes = [LooseWeatherSensor.self]
            let realm = try await Realm(configuration: config)
            // 1. A reading without the deviceId the backend requires, among good ones.
            let missing = ObjectId.generate()
            try realm.write {
                for i in 0..<20 {
                    realm.create(
                        LooseWeatherSensor.self,
                        value: Self.reading(i, id: i == 7 ? missing : .generate(), device: i == 7 ? nil : "WX")
                    )
                }
            }
            try await withDeadline(seconds: 60) { try await realm.syncSession?.wait(for: .upload) }
            // 2. An _id another device (another file of the same user) sent with other content.
            let shared = ObjectId.generate()
            var other = config
            other.fileURL = URL(fileURLWithPath: dir.file("other-device.ingest.sqlite"))
            other.ingestConfiguration.upload.clientID = "other-device"
            let otherRealm = try await Realm(configuration: other)
            try otherRealm.write { otherRealm.create(LooseWeatherSensor.self, value: Self.reading(100, id: shared)) }
            try await withDeadline(seconds: 60) { try await otherRealm.syncSession?.wait(for: .upload) }
            try realm.write { realm.create(LooseWeatherSensor.self, value: Self.reading(200, id: shared)) }
            try await withDeadline(seconds: 60) { try await realm.syncSession?.wait(for: .upload) }

            #expect(gateway.waitUntilArchived(20) == 20, "\(gateway.stderr.suffix(2000))")
            let seen = reported.withLock { $0 }
            #expect(seen.map(\.primaryKey) == [missing, shared], "\(seen)")
            #expect(seen.allSatisfy { $0.objectType == "WeatherSensor" })
            #expect(seen.first?.reason.contains("deviceId") == true, "\(seen)")
            #expect(seen.last?.reason.contains("duplicate_id") == true, "\(seen)")

            let letters = try realm.deadLetters()
            #expect(letters.map(\.recordID) == [missing, shared])
            #expect(letters.map(\.reason) == seen.map(\.reason))
            // Export (NDJSON, the agent's format), replay, discard.
            let export = URL(fileURLWithPath: dir.file("refused.ndjson"))
            #expect(try realm.exportDeadLetters(to: export) == 2)
            let lines = try String(contentsOf: export, encoding: .utf8).split(separator: "\n")
            #expect(
                lines.count == 2 && lines[0].contains("\"_id\":\"\(missing)\"") && lines[0].contains("\"record\":{")
            )
            #expect(try realm.replayDeadLetters([letters[0].number]) == 1)
            try await withDeadline(seconds: 60) { try await realm.syncSession?.wait(for: .upload) }
            // Refused again (nothing was fixed): back as a dead letter, reported again.
            #expect(try realm.deadLetters().map(\.recordID).sorted() == [missing, shared].sorted())
            #expect(reported.withLock { $0.count } == 3)
            #expect(try realm.discardDeadLetters() == 2)
            #expect(try realm.deadLetters().isEmpty)
            #expect(try realm.ingestRealm.statistics().queuedRecords == 0)
        }
    }

    @Test func aLocalRealmWithAsymmetricTypesIsRefusedAtOpenWithWhatToUse() async throws {
        let dir = try TemporaryDirectory()
        let local = Realm.Configuration(
            fileURL: URL(fileURLWithPath: dir.file("local.realm")),
            objectTypes: [WeatherSensor.self]
        )
        let says: (Error) -> Bool = { error in
            let text = (error as NSError).localizedDescription
            return (error as? Realm.Error)?.ingestCode == .invalidConfiguration && text.contains("synced realm")
                && text.contains("flexibleSyncConfiguration()") && text.contains("WeatherSensor")
        }
        #expect(performing: { try Realm(configuration: local) }, throws: says)
        await #expect(performing: { try await Realm(configuration: local, downloadBeforeOpen: .never) }, throws: says)
        var states: [String] = []
        for await state in Realm.asyncOpen(configuration: local) {
            if case .error(let error) = state {
                states.append(says(error) ? "refused" : "\(error)")
            } else {
                states.append("\(state)")
            }
        }
        #expect(states == ["refused"])
        // Nothing was created on disk.
        #expect(!FileManager.default.fileExists(atPath: dir.file("local.realm")))
    }
}
