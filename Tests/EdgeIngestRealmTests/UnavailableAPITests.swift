import Foundation
import TestSupport
import Testing

/// The seeds' calls a write-only realm cannot honour do not compile, and
/// the compiler says why: each is type-checked with the Swift compiler
/// against the built EdgeIngestRealm module.
@Suite struct UnavailableAPITests {
    static let prelude = """
        import EdgeIngestRealm
        class WeatherSensor: AsymmetricObject { @Persisted var name: String }
        func sample(realm: Realm, user: User, config: Realm.Configuration, migration: Migration) {

        """

    /// The compiler's exit status and errors for `body` in a function of the prelude's.
    func typecheck(_ body: String) throws -> (status: Int32, errors: String) {
        let dir = try TemporaryDirectory()
        try (Self.prelude + body + "\n}\n").write(toFile: dir.file("sample.swift"), atomically: true, encoding: .utf8)
        let build = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        let cModules = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { $0.hasPrefix("C") }
        let arguments =
            ["swiftc", "-typecheck", dir.file("sample.swift"), "-I", build.appendingPathComponent("Modules").path]
            + cModules.flatMap { ["-I", sources.appendingPathComponent($0).path] }
        let result = try runTool("/usr/bin/env", arguments)
        let errors = result.output.split(separator: "\n").filter { $0.contains("error:") }.joined(separator: "\n")
        return (result.status, errors)
    }

    @Test func whatAWriteOnlyRealmOffersTypeChecks() throws {
        let (status, errors) = try typecheck(
            """
            try! realm.write { realm.create(WeatherSensor.self, value: ["name": "x"]) }
            _ = user.flexibleSyncConfiguration(clientResetMode: .discardUnsyncedChanges({ before in }, nil))
            migration.renameProperty(onType: "WeatherSensor", from: "a", to: "b")
            """
        )
        #expect(status == 0 && errors.isEmpty, "\(errors)")
    }

    /// `import EdgeIngestRealm` brings Foundation, as `import RealmSwift`
    /// does: the seeds' error handling and the types they use compile with
    /// nothing else imported, and so do the upload-completion calls.
    @Test func theSeedsFoundationTypesAndUploadCompletionNeedNoOtherImport() throws {
        let (status, errors) = try typecheck(
            """
            do {
                let realm = try Realm()
                _ = realm
            } catch let error as NSError {
                print(error.localizedDescription, error.code, error.domain)
            }
            var copy = config
            copy.fileURL = URL(fileURLWithPath: "/tmp").appendingPathComponent("copied.realm")
            copy.encryptionKey = Data(count: 64)
            _ = Date().timeIntervalSince1970
            _ = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask).first
            Task {
                try await realm.syncSession?.wait(for: .upload)
                realm.syncSession?.wait(for: .upload, queue: DispatchQueue.main) { error in _ = error }
                if realm.syncSession?.state == .active, realm.syncSession?.connectionState == .connected {}
                let token = realm.syncSession?.addProgressNotification(for: .upload, mode: .forCurrentlyOutstandingWork) {
                    progress in print(progress.progressEstimate, progress.isTransferComplete, progress.transferredBytes)
                }
                token?.invalidate()
                for letter in try realm.deadLetters() { print(letter.recordID, letter.reason) }
            }
            App(id: "weather").syncManager.errorHandler = { error, session in
                for info in (error as? Realm.Error)?.compensatingWriteInfo ?? [] {
                    print(info.objectType, info.primaryKey, info.reason, session?.state == .invalid)
                }
            }
            """
        )
        #expect(status == 0 && errors.isEmpty, "\(errors)")
    }

    @Test(
        arguments: [
            ("_ = realm.objects(WeatherSensor.self)", "cannot read records back"),
            (
                "_ = realm.object(ofType: WeatherSensor.self, forPrimaryKey: ObjectId.generate())",
                "cannot read records back"
            ),
            ("realm.delete(WeatherSensor())", "cannot be deleted"),
            ("_ = user.configuration(partitionValue: \"myPartition\")", "Partition-based sync is not supported"),
            ("_ = user.flexibleSyncConfiguration(initialSubscriptions: { subs in })", "uses no subscriptions"),
            ("_ = config.readOnly", "cannot be opened read-only"),
            ("_ = config.deleteRealmIfMigrationNeeded", "never deleted for a schema change"),
            ("_ = migration.deleteData(forType: \"WeatherSensor\")", "not deleted by a migration"),
            // The seeds' Flexible Sync set-up, as written there.
            (
                "_ = user.flexibleSyncConfiguration(initialSubscriptions: { subs in subs.append(QuerySubscription<WeatherSensor>(name: \"all\")) })",
                "uses no subscriptions"
            ),
            ("_ = QuerySubscription<WeatherSensor>(name: \"all_todos\")", "uses no subscriptions"),
            ("_ = realm.subscriptions", "uses no subscriptions"),
            ("class Dog: Object { @Persisted var name: String }", "AsymmetricObject"),
            ("class Address: EmbeddedObject { @Persisted var street: String }", "flat records"),
        ]
    )
    func whatItCannotHonourFailsToCompileWithTheReason(code: String, reason: String) throws {
        let (status, errors) = try typecheck(code)
        #expect(status != 0 && errors.contains("is unavailable") && errors.contains(reason), "\(errors)")
    }
}
