import EdgeIngestRealm

/// "同期された Realm の設定とオープン" (../shared/seeds): the samples that
/// concern write-only data, as written, with `App(id: APPID)` given the
/// backend. The samples with partition-based sync (`configuration(partitionValue:)`),
/// subscriptions or reading objects back do not compile against
/// EdgeIngestRealm, by design (docs/MIGRATING-FROM-REALM.md).
///
/// Its file imports nothing but EdgeIngestRealm, as the seeds' code imports
/// nothing but RealmSwift; the harness (OpenSyncedRealmSeedTests) gives it
/// the app id, the backend and a login.
struct OpenSyncedRealmSamples {
    let APPID: String
    let backend: AppConfiguration
    let email: String
    let password: String

    func emailPasswordCredentials(app: App) -> Credentials {
        Credentials.emailPassword(email: email, password: password)
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
