import EdgeIngestRealm
import Synchronization
import TestSupport
import Testing

/// Each ClientResetMode end to end, through the Realm-shaped API, against
/// a gateway (the built ingestd) that demands the reset:
/// - `session_superseded` (409, recoverable): the device's queue file was
///   restored from a backup older than a session the gateway has seen;
/// - `schema_too_new` (409, not recoverable): the app's schema version is
///   newer than the gateway's.
@Suite(.serialized) struct ClientResetGatewayTests {
    struct Device {
        let gateway: GatewayProcess
        let dir: TemporaryDirectory
        let user: User
        /// The records the gateway stored before the reset (2 + 1).
        let storedBefore = 3

        func configuration(_ file: String, _ mode: ClientResetMode, schemaVersion: UInt64 = 0) -> Realm.Configuration {
            var configuration = user.flexibleSyncConfiguration(clientResetMode: mode)
            configuration.fileURL = URL(fileURLWithPath: dir.file(file))
            configuration.objectTypes = [WeatherSensor.self]
            configuration.schemaVersion = schemaVersion
            configuration.ingestConfiguration.upload.lingerMilliseconds = 0
            return configuration
        }
    }

    /// A device that uploaded 2 readings, kept a copy of its queue file,
    /// then went on under a new session (1 more reading): opening the copy
    /// is a device restored from that backup.
    func restoredDevice(schemaVersion: Int = 0) async throws -> Device {
        let gateway = try GatewayProcess(types: seedTypesTOML, schemaVersion: schemaVersion)
        let dir = try TemporaryDirectory()
        let app = App(
            id: GatewayProcess.appID,
            configuration: AppConfiguration(baseURL: gateway.baseURL, metadataDirectory: dir.file("metadata"))
        )
        let user = try await app.login(credentials: .anonymous)
        let device = Device(gateway: gateway, dir: dir, user: user)
        do {
            let realm = try await Realm(configuration: device.configuration("live.ingest.sqlite", .manual()))
            try write(realm, 2)
            try await realm.ingestRealm.waitForUpload()
        }
        try FileManager.default.copyItem(
            atPath: dir.file("live.ingest.sqlite"),
            toPath: dir.file("backup.ingest.sqlite")
        )
        do {
            let realm = try await Realm(configuration: device.configuration("live.ingest.sqlite", .manual()))
            try realm.resolveClientReset(discard: false)  // a new session, as after an earlier reset
            try write(realm, 1)
            try await realm.ingestRealm.waitForUpload()
        }
        #expect(gateway.waitUntilArchived(device.storedBefore) == device.storedBefore)
        return device
    }

    func write(_ realm: Realm, _ count: Int) throws {
        try realm.write {
            for i in 0..<count {
                realm.create(WeatherSensor.self, value: DataIngestSeedTests.reading(wind: i))
            }
        }
    }

    /// What the before/after blocks saw: pending records in `before`, and whether `after` came.
    final class Seen: Sendable {
        let before = Mutex<Int64?>(nil)
        let after = Mutex<(before: Int64, live: Int64)?>(nil)
        /// The mode the live realm in `after` reports.
        let liveMode = Mutex<String?>(nil)

        func beforeBlock(backup: Realm.Configuration? = nil) -> @Sendable (Realm) -> Void {
            { before in
                self.before.withLock { $0 = try? before.ingestRealm.statistics().queuedRecords }
                if let backup { try? before.writeCopy(configuration: backup) }
            }
        }

        var afterBlock: @Sendable (Realm, Realm) -> Void {
            { before, after in
                let frozen = (try? before.ingestRealm.statistics().queuedRecords) ?? -1
                let live = (try? after.ingestRealm.statistics().queuedRecords) ?? -1
                self.after.withLock { $0 = (frozen, live) }
                let mode: String
                switch after.configuration.syncConfiguration?.clientResetMode {
                case .discardUnsyncedChanges?: mode = "discard"
                case .recoverUnsyncedChanges?: mode = "recover"
                case .some: mode = "other"
                case nil: mode = "none"
                }
                self.liveMode.withLock { $0 = mode }
            }
        }
    }

    @Test func recoverUploadsThePendingRecordsUnderANewSession() async throws {
        let device = try await restoredDevice()
        let seen = Seen()
        let realm = try await Realm(
            configuration: device.configuration(
                "backup.ingest.sqlite",
                .recoverUnsyncedChanges(beforeReset: seen.beforeBlock(), afterReset: seen.afterBlock)
            )
        )
        try write(realm, 4)
        try await realm.ingestRealm.waitForUpload()
        #expect(device.gateway.waitUntilArchived(device.storedBefore + 4) == device.storedBefore + 4)
        #expect(seen.before.withLock { $0 } == 4)
        #expect(seen.after.withLock { $0 }.map { $0.before } == 4)
        #expect(seen.liveMode.withLock { $0 } == "recover")
        #expect(try realm.ingestRealm.statistics().droppedByReason.isEmpty)
        #expect(device.gateway.stderr.contains("session_superseded"))
    }

    @Test func discardDropsThePendingRecordsAfterBeforeCopiedThem() async throws {
        let device = try await restoredDevice()
        let seen = Seen()
        // The seeds' discardUnsyncedChanges sample: a recovery copy in `before`.
        var recoveryConfig = Realm.Configuration()
        recoveryConfig.fileURL = URL(fileURLWithPath: device.dir.file("recovered.realm"))
        recoveryConfig.objectTypes = [WeatherSensor.self]
        let realm = try await Realm(
            configuration: device.configuration(
                "backup.ingest.sqlite",
                .discardUnsyncedChanges(seen.beforeBlock(backup: recoveryConfig), seen.afterBlock)
            )
        )
        try write(realm, 4)
        // Dropped first, then the blocks run: wait for the after block too.
        #expect(
            eventually(timeout: 30) {
                (try? realm.ingestRealm.statistics().droppedByReason["client_reset"]) == 4
                    && seen.after.withLock { $0 } != nil
            }
        )
        #expect(seen.before.withLock { $0 } == 4)
        #expect(seen.after.withLock { $0 }.map { $0.before } == 4)
        #expect(seen.liveMode.withLock { $0 } == "discard")
        // Uploading goes on under the new session.
        try write(realm, 1)
        try await realm.ingestRealm.waitForUpload()
        #expect(device.gateway.waitUntilArchived(device.storedBefore + 1) == device.storedBefore + 1)
        // The backup copy holds the 4 discarded readings (a local file: a
        // Realm-shaped realm refuses it, EdgeIngest's local queue opens it).
        let recovered = try await IngestRealm(configuration: recoveryConfig.ingestConfiguration)
        #expect(try recovered.statistics().queuedRecords == 4)
    }

    @Test func recoverOrDiscardRecoversWhenTheGatewaySaysItCan() async throws {
        let device = try await restoredDevice()
        let realm = try await Realm(
            configuration: device.configuration("backup.ingest.sqlite", .recoverOrDiscardUnsyncedChanges())
        )
        try write(realm, 2)
        try await realm.ingestRealm.waitForUpload()
        #expect(device.gateway.waitUntilArchived(device.storedBefore + 2) == device.storedBefore + 2)
        #expect(try realm.ingestRealm.statistics().droppedByReason.isEmpty)
        #expect(device.gateway.stderr.contains("session_superseded"))  // a reset did happen
    }

    @Test func recoverOrDiscardDiscardsWhenTheGatewaySaysItCannot() async throws {
        // The app's schema (1) is newer than the gateway's (0): schema_too_new, not recoverable.
        let gateway = try GatewayProcess(types: seedTypesTOML, schemaVersion: 0)
        let dir = try TemporaryDirectory()
        let app = App(
            id: GatewayProcess.appID,
            configuration: AppConfiguration(baseURL: gateway.baseURL, metadataDirectory: dir.path)
        )
        let device = Device(gateway: gateway, dir: dir, user: try await app.login(credentials: .anonymous))
        let realm = try await Realm(
            configuration: device.configuration(
                "newer.ingest.sqlite",
                .recoverOrDiscardUnsyncedChanges(),
                schemaVersion: 1
            )
        )
        try write(realm, 3)
        #expect(eventually(timeout: 30) { (try? realm.ingestRealm.statistics().droppedByReason["client_reset"]) == 3 })
        #expect(try gateway.archivedIDs().isEmpty)
        #expect(gateway.stderr.contains("schema_too_new"))
    }

    @Test func manualKeepsEverythingUntilTheAppResolvesIt() async throws {
        let device = try await restoredDevice()
        let reported = Mutex<(message: String, session: SyncSession?)?>(nil)
        let realm = try await Realm(
            configuration: device.configuration(
                "backup.ingest.sqlite",
                .manual(errorHandler: { error, session in
                    reported.withLock { $0 = (error.localizedDescription, session) }
                })
            )
        )
        try write(realm, 2)
        #expect(eventually(timeout: 30) { reported.withLock { $0 } != nil })
        let (message, session) = try #require(reported.withLock { $0 })
        #expect(message.contains("client reset"), "\(message)")
        #expect(try realm.ingestRealm.statistics().queuedRecords == 2)  // nothing lost, nothing sent
        #expect(realm.ingestRealm.pendingClientReset != nil)
        #expect(session?.parentUser()?.id == device.user.id)
        // A wait cannot end by itself now: it says what the app must do.
        await #expect {
            try await withDeadline(seconds: 60) { try await realm.syncSession?.wait(for: .upload) }
        } throws: { error in
            (error as? Realm.Error)?.ingestCode == .uploadHeld
                && (error as NSError).localizedDescription.contains("resolveClientReset")
        }
        #expect(realm.syncSession?.state == .inactive)
        // The app decides: upload them again under a new session.
        try #require(session).resolveClientReset(discard: false)
        try await realm.ingestRealm.waitForUpload()
        #expect(device.gateway.waitUntilArchived(device.storedBefore + 2) == device.storedBefore + 2)
    }

    @Test func recoverFallsBackToManualAndTheSyncManagerWhenItCannotWork() async throws {
        // The handler is process-wide: other suites' tests set it too.
        try await withProcessWideState {
            let gateway = try GatewayProcess(types: seedTypesTOML, schemaVersion: 0)
            let dir = try TemporaryDirectory()
            let app = App(
                id: GatewayProcess.appID,
                configuration: AppConfiguration(baseURL: gateway.baseURL, metadataDirectory: dir.path)
            )
            let device = Device(gateway: gateway, dir: dir, user: try await app.login(credentials: .anonymous))
            let reported = Mutex<String?>(nil)
            app.syncManager.errorHandler = { error, session in
                if (error as? Realm.Error)?.ingestCode == .clientResetRequired {
                    reported.withLock { $0 = session?.parentUser()?.id }
                }
            }
            defer { app.syncManager.errorHandler = nil }
            let realm = try await Realm(
                configuration: device.configuration("newer.ingest.sqlite", .recoverUnsyncedChanges(), schemaVersion: 1)
            )
            try write(realm, 2)
            #expect(eventually(timeout: 30) { reported.withLock { $0 } == device.user.id })
            #expect(try realm.ingestRealm.statistics().queuedRecords == 2)
            #expect(realm.ingestRealm.pendingClientReset != nil)
        }
    }
}
