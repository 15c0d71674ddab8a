import EdgeIngestRealm
import TestSupport

/// One gateway shared by the tests that need a synced realm but not a
/// gateway of their own (a write-only realm must have a user: a local one
/// is refused at open). Each configuration is a new anonymous user's, on
/// its own file: realms of tests running at once do not share a session.
///
///     let realm = try await Realm(configuration: SyncedRealmFixture.shared.configuration())
actor SyncedRealmFixture {
    static let shared = SyncedRealmFixture()

    private var made: (gateway: GatewayProcess, dir: TemporaryDirectory)?

    /// The shared gateway and the directory of the users and files, made on first use.
    private func gateway() throws -> (GatewayProcess, TemporaryDirectory) {
        if let made { return made }
        let started = (try GatewayProcess(types: seedTypesTOML), try TemporaryDirectory())
        made = started
        return started
    }

    /// A synced configuration of a new user on a new file (or on `file`),
    /// with `objectTypes`.
    func configuration(
        objectTypes: [AsymmetricObject.Type] = [WeatherSensor.self],
        file: URL? = nil
    ) async throws -> Realm.Configuration {
        let (gateway, dir) = try gateway()
        let app = App(
            id: GatewayProcess.appID,
            configuration: AppConfiguration(baseURL: gateway.baseURL, metadataDirectory: dir.path)
        )
        var config = try await app.login(credentials: .anonymous).flexibleSyncConfiguration()
        config.fileURL = file ?? URL(fileURLWithPath: dir.file("realm-\(ObjectId.generate()).ingest.sqlite"))
        config.objectTypes = objectTypes
        return config
    }
}
