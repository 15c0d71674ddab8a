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
        ]
    )
    func whatItCannotHonourFailsToCompileWithTheReason(code: String, reason: String) throws {
        let (status, errors) = try typecheck(code)
        #expect(status != 0 && errors.contains("is unavailable") && errors.contains(reason), "\(errors)")
    }
}
