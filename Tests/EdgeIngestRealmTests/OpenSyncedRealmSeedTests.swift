import EdgeIngestRealm
import TestSupport
import Testing

@Suite struct OpenSyncedRealmSeedTests {
    let gateway: GatewayProcess
    let metadata: TemporaryDirectory
    let samples: OpenSyncedRealmSamples

    init() throws {
        gateway = try GatewayProcess(types: seedTypesTOML)
        metadata = try TemporaryDirectory()
        samples = OpenSyncedRealmSamples(
            APPID: GatewayProcess.appID,
            backend: AppConfiguration(baseURL: gateway.baseURL, metadataDirectory: metadata.path),
            email: GatewayProcess.email,
            password: GatewayProcess.password
        )
    }

    @Test func openAFlexibleSyncRealmWithEmailPasswordAndAlways() async throws {
        let realm = try await samples.openFlexibleSyncRealm()
        try realm.write {
            realm.create(Task.self, value: ["name": "Keep an eye on that Gollum"])
            realm.create(Team.self, value: ["name": "Fellowship"])
        }
        #expect(gateway.waitUntilArchived(1, "Task") == 1, "\(gateway.stderr.suffix(2000))")
        #expect(gateway.waitUntilArchived(1, "Team") == 1)
        // The file is the user's, under the app's metadata directory.
        let user = try #require(App(id: samples.APPID, configuration: samples.backend).currentUser)
        #expect(realm.configuration.fileURL?.path == metadata.file("users/\(user.id)/default.ingest.sqlite"))
    }

    @Test func openASyncedRealmInMemory() async throws {
        let realm = try await samples.openInMemory()
        #expect(realm.configuration.fileURL == nil)
        try realm.write { realm.create(Task.self, value: ["name": "in memory"]) }
        try await realm.ingestRealm.waitForUpload()
        #expect(gateway.waitUntilArchived(1, "Task") == 1)
        // No queue file was created for the user.
        let files = try FileManager.default.subpathsOfDirectory(atPath: metadata.path)
        #expect(!files.contains { $0.hasSuffix(".ingest.sqlite") }, "\(files)")
    }

    @Test func downloadBeforeOpenAlwaysReachesTheGatewayAndFailsWithoutIt() async throws {
        let realm = try await samples.getRealmAfterDownloadingUpdates()
        print("The open realm is: \(realm)")
        try await realm.asyncWrite { realm.create(FlexibleSync_Task.self, value: ["name": "downloaded"]) }
        #expect(gateway.waitUntilArchived(1, "FlexibleSync_Task") == 1)

        // The cached user, with the gateway unreachable: .always fails (offline), .never opens.
        let offline = App(
            id: samples.APPID,
            configuration: AppConfiguration(baseURL: "http://127.0.0.1:9", metadataDirectory: metadata.path)
        )
        let user = try #require(offline.currentUser)
        var configuration = user.flexibleSyncConfiguration()
        configuration.objectTypes = [FlexibleSync_Task.self]
        configuration.inMemoryIdentifier = "offline-\(ObjectId.generate())"
        var failure: EdgeIngestError?
        do {
            _ = try await Realm(configuration: configuration, downloadBeforeOpen: .always)
        } catch {
            failure = (error as? Realm.Error)?.ingestError
        }
        #expect(failure?.code == .offline, "\(String(describing: failure))")
        _ = try await Realm(configuration: configuration, downloadBeforeOpen: .never)
    }
}
