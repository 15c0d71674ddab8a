import EdgeIngest

extension User {
    /// A configuration that uploads under this user's session: Realm's
    /// `flexibleSyncConfiguration(clientResetMode:)`. Its ``Realm/Configuration/fileURL``
    /// is `<metadata directory>/users/<id>/default.ingest.sqlite`.
    ///
    /// ```swift
    /// var config = user.flexibleSyncConfiguration()
    /// config.objectTypes = [WeatherSensor.self]
    /// let realm = try await Realm(configuration: config)
    /// ```
    public func flexibleSyncConfiguration(
        clientResetMode: ClientResetMode = .recoverUnsyncedChanges()
    ) -> Realm.Configuration {
        var configuration = Realm.Configuration(self.configuration())
        configuration.ingestConfiguration.filePath =
            app.configuration.metadataDirectory + "/users/" + id + "/default.ingest.sqlite"
        configuration.clientResetMode = clientResetMode
        return configuration
    }

    @available(
        *,
        unavailable,
        message:
            "Data Ingest uses no subscriptions: use flexibleSyncConfiguration() and set objectTypes to the AsymmetricObject types."
    )
    public func flexibleSyncConfiguration(
        clientResetMode: ClientResetMode = .recoverUnsyncedChanges(),
        initialSubscriptions: @escaping (SyncSubscriptionSet) -> Void,
        rerunOnOpen: Bool = false
    ) -> Realm.Configuration { flexibleSyncConfiguration() }

    @available(
        *,
        unavailable,
        message:
            "Partition-based sync is not supported (Data Ingest needs Flexible Sync): use flexibleSyncConfiguration()."
    )
    public func configuration<T>(
        partitionValue: T,
        clientResetMode: ClientResetMode = .recoverUnsyncedChanges()
    )
        -> Realm.Configuration
    { flexibleSyncConfiguration() }
}

extension Credentials {
    /// A server API key (Realm's `.serverAPIKey`): the gateway's `api_keys_file`.
    public static func serverAPIKey(_ key: String) -> Credentials { .apiKey(key) }
    /// A user API key (Realm's `.userAPIKey`): the gateway's `api_keys_file` too.
    public static func userAPIKey(_ key: String) -> Credentials { .apiKey(key) }
}
