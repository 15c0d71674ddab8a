import EdgeIngestRealm
import TestSupport
import Testing

/// "Configurar e abrir um domínio" (../shared/seeds): the samples that
/// concern write-only data, as written. Realm finds every object type of
/// the program by itself; Swift on Linux cannot, so the program declares
/// them once on the default configuration. And a write-only realm must be
/// synced (Realm refuses asymmetric types in a local realm), so the app's
/// start-up makes its default configuration a user's
/// `flexibleSyncConfiguration()`: the harness here does that, and the
/// samples' `Realm()` and `Realm.Configuration.defaultConfiguration` then
/// work as written.
@Suite(.serialized) struct ConfigureAndOpenSeedTests {
    /// The default configuration: a synced one of the shared user, in a
    /// temporary directory, with the seeds' types, for the duration of `body`.
    func withDefaultConfiguration(_ body: (TemporaryDirectory) async throws -> Void) async throws {
        let dir = try TemporaryDirectory()
        let saved = Realm.Configuration.defaultConfiguration
        var configuration = try await SyncedRealmFixture.shared.configuration(
            objectTypes: [WeatherSensor.self, Dog.self],
            file: URL(fileURLWithPath: dir.file("default.realm"))
        )
        configuration.ingestConfiguration.upload.lingerMilliseconds = 60_000  // counts stay put while a test looks
        Realm.Configuration.defaultConfiguration = configuration
        defer { Realm.Configuration.defaultConfiguration = saved }
        try await body(dir)
    }

    @Test func theDefaultConfigurationHasARealFileURL() {
        // What the seeds' path manipulations rely on.
        let url = Realm.Configuration.defaultConfiguration.fileURL
        #expect(url?.path == IngestConfiguration.defaultDirectory + "/default.realm")
        #expect(IngestConfiguration.defaultConfiguration.fileURL?.path == IngestConfiguration.defaultFilePath)
        #expect(IngestConfiguration.defaultDirectory.hasPrefix("/"))
    }

    @Test func openTheDefaultRealmAndOneAtAFileURL() async throws {
        try await withDefaultConfiguration { dir in
            // Open the default realm
            let defaultRealm = try! Realm()
            // Open the realm with a specific file URL, for example a username
            let username = "GordonCole"
            var config = Realm.Configuration.defaultConfiguration
            config.fileURL!.deleteLastPathComponent()
            config.fileURL!.appendPathComponent(username)
            config.fileURL!.appendPathExtension("realm")
            let realm = try! Realm(configuration: config)

            try realm.write { realm.create(Dog.self, value: ["name": "Rex"]) }
            try defaultRealm.write { defaultRealm.add(Dog(value: "Fido")) }
            #expect(FileManager.default.fileExists(atPath: dir.file("GordonCole.realm")))
            #expect(FileManager.default.fileExists(atPath: dir.file("default.realm")))
            #expect(try realm.ingestRealm.statistics().queuedRecords == 1)
            #expect(try defaultRealm.ingestRealm.statistics().queuedRecords == 1)
        }
    }

    @Test func openAnInMemoryRealm() async throws {
        try await withDefaultConfiguration { dir in
            // Open the realm with a specific in-memory identifier.
            let identifier = "MyRealm"
            // The seeds make a new, local configuration here: a write-only
            // realm must be synced, so the identifier goes on the synced one.
            var config = Realm.Configuration.defaultConfiguration
            config.inMemoryIdentifier = identifier
            // Open the realm
            let realm = try! Realm(configuration: config)

            #expect(config.fileURL == nil)
            try realm.write { realm.create(WeatherSensor.self, value: DataIngestSeedTests.reading(wind: 3)) }
            #expect(try realm.ingestRealm.statistics().queuedRecords == 1)
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
        }
    }

    @Test func openWithSwiftConcurrency() async throws {
        try await withDefaultConfiguration { _ in
            try await mainThreadFunction()
        }
    }

    func mainThreadFunction() async throws {
        // These are identical: the async init produces a
        // MainActor-isolated Realm if no actor is supplied
        let realm1 = try await Realm()
        let realm2 = try await Realm(actor: MainActor.shared)
        try await useTheRealm(realm: realm1)
        #expect(try realm2.ingestRealm.statistics().queuedRecords == 1)  // the same file
    }

    func useTheRealm(realm: Realm) async throws {
        try await realm.asyncWrite { realm.create(Dog.self, value: ["name": "Pippin"]) }
    }

    @Test func handleErrorsWithSwiftsErrorHandling() async throws {
        try await withDefaultConfiguration { dir in
            // A directory where the file should be: opening fails with a message that says so.
            try FileManager.default.createDirectory(
                atPath: dir.file("default.realm"),
                withIntermediateDirectories: true
            )
            var caught: NSError?
            do {
                let realm = try Realm()
                // Use realm
                _ = realm
            } catch let error as NSError {
                // Handle error
                caught = error
            }
            let error = try #require(caught)
            #expect(error.localizedDescription.contains("not a regular file"), "\(error.localizedDescription)")
        }
    }

    @Test func provideASubsetOfClasses() async throws {
        try await withDefaultConfiguration { _ in
            var config = Realm.Configuration.defaultConfiguration
            // Given: `class Dog: Object`
            // Limit the realm to only the Dog object. All other
            // Object- and EmbeddedObject-derived classes are not added.
            config.objectTypes = [Dog.self]
            let realm = try! Realm(configuration: config)

            #expect {
                try realm.write { realm.create(WeatherSensor.self, value: DataIngestSeedTests.reading(wind: 1)) }
            } throws: { error in
                (error as? Realm.Error)?.ingestCode == .unknownObjectType
            }
        }
    }

    @Test func theRealmsParentDirectory() async throws {
        try await withDefaultConfiguration { dir in
            let realm = try! Realm()
            // Get the realm file's parent directory
            let folderPath = realm.configuration.fileURL!.deletingLastPathComponent().path
            #expect(folderPath == dir.path)
        }
    }
}

extension Dog {
    convenience init(value name: String) {
        self.init()
        self.name = name
    }
}
