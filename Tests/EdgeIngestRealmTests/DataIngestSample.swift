import EdgeIngestRealm

/// The Data Ingest page (../shared/seeds, "Atlas へのデータのストリーム"):
/// its code as written, inside a type whose `app` is made by the one
/// line that says where the backend is.
///
/// Its file imports nothing but EdgeIngestRealm, as the seeds' code imports
/// nothing but RealmSwift.
struct DataIngestSample {
    let app: App

    init(appID: String, backend: String, metadata: String) {
        // Was: let app = App(id: INSERT_APP_ID_HERE)
        app = App(
            id: appID,
            configuration: AppConfiguration(baseURL: backend, metadataDirectory: metadata)
        )
    }

    // The page's top-level code.
    func run() async {
        do {
            let user = try await login()
            await openSyncedRealm(user: user)
        } catch {
            print("Error logging in: \(error.localizedDescription)")
        }
    }

    func login() async throws -> User {
        let user = try await app.login(credentials: .anonymous)
        return user
    }

    func openSyncedRealm(user: User) async {
        do {
            var asymmetricConfig = user.flexibleSyncConfiguration()
            asymmetricConfig.objectTypes = [WeatherSensor.self]
            let asymmetricRealm = try await Realm(configuration: asymmetricConfig)
            await useRealm(asymmetricRealm, user)
        } catch {
            print("Error opening realm: \(error.localizedDescription)")
        }
    }

    func useRealm(_ asymmetricRealm: Realm, _ user: User) async {
        try! asymmetricRealm.write {
            asymmetricRealm.create(
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
    }
}
