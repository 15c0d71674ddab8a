import EdgeIngest
import Foundation
import TestSupport
import Testing

/// An app on a test backend, caching users in `dir`.
func makeApp(_ backend: TestBackend?, _ dir: TemporaryDirectory, deadPort: Int = 1) throws -> App {
    let base = backend?.baseURL ?? "http://127.0.0.1:\(deadPort)"
    var configuration = AppConfiguration(baseURL: base, metadataDirectory: dir.file("metadata"))
    configuration.http.connectTimeoutMilliseconds = 1_000
    configuration.http.timeoutMilliseconds = 3_000
    return try App(id: "weather-fleet", configuration: configuration)
}

@Suite struct AppLoginTests {
    @Test func eachCredentialTypeLogsInAndIsCachedPrivately() async throws {
        let dir = try TemporaryDirectory()
        let backend = try TestBackend(["--auth", "--api-key", "gw-key-1", "--account", "alice@example.com:s3cret"])
        let app = try makeApp(backend, dir)
        let anonymous = try await app.login(credentials: .anonymous)
        let gateway = try await app.login(credentials: .apiKey("gw-key-1"))
        let alice = try await app.login(credentials: .emailPassword(email: "alice@example.com", password: "s3cret"))
        #expect(
            anonymous.provider == "anonymous" && gateway.provider == "api-key" && alice.provider == "email-password"
        )
        #expect(gateway.id == "key-0" && alice.id == "user-alice")
        #expect(app.currentUser === alice)
        #expect(Set(app.allUsers.keys) == [anonymous.id, gateway.id, alice.id])
        #expect(try backend.stats()["logins"] as? Int == 3)

        let cache = dir.file("metadata/users.json")
        let mode = try FileManager.default.attributesOfItem(atPath: cache)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let directoryMode =
            try FileManager.default.attributesOfItem(atPath: dir.file("metadata"))[.posixPermissions] as? Int
        #expect(directoryMode == 0o700)
        // Passwords and keys are never cached or printed; only tokens are kept.
        let text = try String(contentsOfFile: cache, encoding: .utf8)
        #expect(!text.contains("s3cret") && !text.contains("gw-key-1"))
        #expect(!"\(Credentials.emailPassword(email: "alice@example.com", password: "s3cret"))".contains("s3cret"))
        #expect(!"\(Credentials.apiKey("gw-key-1"))".contains("gw-key-1"))
    }

    @Test func refusedCredentialsAndAnUnreachableBackendSayWhich() async throws {
        let dir = try TemporaryDirectory()
        let backend = try TestBackend(["--api-key", "right"])
        let app = try makeApp(backend, dir)
        await #expect { try await app.login(credentials: .apiKey("wrong")) } throws: { error in
            let e = error as? EdgeIngestError
            return e?.code == .authenticationFailed && e?.message.contains("HTTP 401") == true
                && e?.message.contains("wrong") == false
        }
        let offline = try makeApp(nil, try TemporaryDirectory())
        await #expect { try await offline.login(credentials: .anonymous) } throws: { error in
            let e = error as? EdgeIngestError
            return e?.code == .offline && e?.message.contains("Cannot reach the backend to log in") == true
        }
        #expect(app.currentUser == nil)
    }

    @Test func theCachedUserIsThereOfflineAfterARestart() async throws {
        let dir = try TemporaryDirectory()
        var port = 0
        var userID = ""
        do {
            let backend = try TestBackend()
            port = backend.port
            userID = try await makeApp(backend, dir).login(credentials: .anonymous).id
        }  // the backend is gone now
        let restarted = try makeApp(nil, dir, deadPort: port)
        let user = try #require(restarted.currentUser)
        #expect(user.id == userID && user.state == .loggedIn)
        // The queue opens and takes writes with no network.
        var configuration = user.configuration()
        configuration.objectTypes = [WeatherSensor.self]
        let realm = try await IngestRealm(configuration: configuration)
        try realm.write {
            try $0.create(
                WeatherSensor.self,
                value: [
                    "deviceId": "WX1", "temperatureInFahrenheit": 1.5, "barometricPressureInHg": 29.9,
                    "windSpeedInMph": 3,
                ]
            )
        }
        #expect(try realm.statistics().queuedRecords == 1)
    }

    @Test func logOutRemovesOnlyThatUsersCredentials() async throws {
        let dir = try TemporaryDirectory()
        let backend = try TestBackend(["--api-key", "k"])
        let app = try makeApp(backend, dir)
        let first = try await app.login(credentials: .anonymous)
        let second = try await app.login(credentials: .apiKey("k"))
        try await second.logOut()
        #expect(second.state == .loggedOut)
        #expect(app.currentUser === first)
        let reread = try makeApp(backend, dir)
        #expect(Set(reread.allUsers.keys) == [first.id])
        #expect(try backend.stats()["logouts"] as? Int == 1)
    }

    @Test func anExpiredTokenIsRefreshedAndARefusedRefreshWaitsForTheUser() async throws {
        let dir = try TemporaryDirectory()
        let backend = try TestBackend(["--auth", "--api-key", "k"])
        let app = try makeApp(backend, dir)
        let user = try await app.login(credentials: .apiKey("k"))
        var configuration = user.configuration()
        configuration.objectTypes = [WeatherSensor.self]
        configuration.upload.lingerMilliseconds = 0
        let realm = try await IngestRealm(configuration: configuration)
        try writeSensors(realm, 5, from: 0)
        try await realm.waitForUpload()

        // The backend forgets every access token: a 401, one refresh, the same batch again.
        try backend.control("expire-tokens")
        try writeSensors(realm, 5, from: 5)
        try await realm.waitForUpload()
        #expect(try backend.stats()["refreshes"] as? Int ?? 0 >= 1)

        // Now it also refuses the refresh: writes are kept, the user must log in again.
        try backend.control("expire-tokens")
        try backend.control("refuse-refresh")
        try writeSensors(realm, 5, from: 10)
        #expect(eventually { realm.uploadState?.state == .waitingForUser })
        #expect(user.state == .waitingForUser)
        #expect(try realm.statistics().queuedRecords == 5)
        _ = try await app.login(credentials: .apiKey("k"))
        try await realm.waitForUpload(timeout: .seconds(10))
        #expect(try backend.waitForUnique(15) == 15)
        #expect(try backend.stats()["duplicates"] as? Int == 0)
    }
}

/// Writes `n` WeatherSensor records with windSpeedInMph from `start`.
func writeSensors(_ realm: IngestRealm, _ n: Int, from start: Int, device: String = "WX1278UIT") throws {
    try realm.write { transaction in
        for i in start..<start + n {
            try transaction.create(
                WeatherSensor.self,
                value: [
                    "deviceId": device, "temperatureInFahrenheit": 66.7, "barometricPressureInHg": 29.65,
                    "windSpeedInMph": i,
                ]
            )
        }
    }
}
