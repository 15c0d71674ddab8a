import EdgeIngestRealm
import Foundation
import TestSupport
import Testing

/// "同期された Realm の設定とオープン" (../shared/seeds): the samples that
/// concern write-only data, as written, with `App(id: APPID)` given the
/// backend. The samples with partition-based sync (`configuration(partitionValue:)`),
/// subscriptions or reading objects back do not compile against
/// EdgeIngestRealm, by design (docs/MIGRATING-FROM-REALM.md).
struct OpenSyncedRealmSamples {
    let APPID = GatewayProcess.appID
    let backend: AppConfiguration

    func emailPasswordCredentials(app: App) -> Credentials {
        Credentials.emailPassword(email: GatewayProcess.email, password: GatewayProcess.password)
    }

    // Opening a realm and accessing it must be done from the same thread.
    // Marking this function as `@MainActor` avoids threading-related issues.
    func openFlexibleSyncRealm() async throws -> Realm {
        let app = App(id: APPID, configuration: backend)
        let credentials = emailPasswordCredentials(app: app)
        let user = try await app.login(credentials: credentials)
        var config = user.flexibleSyncConfiguration()
        // Pass object types to the Flexible Sync configuration
        // as a temporary workaround for not being able to add complete schema
        // for a Flexible Sync app
        config.objectTypes = [Task.self, Team.self]
        let realm = try await Realm(configuration: config, downloadBeforeOpen: .always)
        print("Successfully opened realm: \(realm)")
        return realm
    }

    func openInMemory() async throws -> Realm {
        // Instantiate the app and get a user.
        let app = App(id: APPID, configuration: backend)
        let user = try await app.login(credentials: Credentials.anonymous)
        // Create a configuration.
        var configuration = user.flexibleSyncConfiguration()
        configuration.objectTypes = [Task.self, Team.self]
        // Specify an in-memory identifier for the configuration.
        configuration.inMemoryIdentifier = "YOUR-IDENTIFIER-STRING"
        // Open a Realm with this configuration.
        let realm = try await Realm(configuration: configuration)
        print("Successfully opened realm: \(realm)")
        // Add subscriptions and work with the realm
        return realm
    }

    func getRealmAfterDownloadingUpdates() async throws -> Realm {
        let app = App(id: APPID, configuration: backend)
        let user = try await app.login(credentials: Credentials.anonymous)
        var configuration = user.flexibleSyncConfiguration()
        configuration.objectTypes = [FlexibleSync_Task.self, FlexibleSync_Team.self]
        let realm = try await Realm(configuration: configuration, downloadBeforeOpen: .always)
        print("Successfully opened realm after downloading: \(realm)")
        return realm
    }
}

@Suite struct OpenSyncedRealmSeedTests {
    let gateway: GatewayProcess
    let metadata: TemporaryDirectory
    let samples: OpenSyncedRealmSamples

    init() throws {
        gateway = try GatewayProcess(types: seedTypesTOML)
        metadata = try TemporaryDirectory()
        samples = OpenSyncedRealmSamples(
            backend: AppConfiguration(baseURL: gateway.baseURL, metadataDirectory: metadata.path)
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
