import EdgeIngest
import Foundation
import Synchronization
import TestSupport
import Testing

/// Each client-reset mode against a backend that loses this client's
/// session (409 `client_reset_required` for every batch of a lost session).
@Suite(.serialized) struct ClientResetTests {
    struct Setup {
        let dir: TemporaryDirectory
        let backend: TestBackend
        let realm: IngestRealm
    }

    /// A realm with 5 records uploaded (so the backend knows its session),
    /// after which the backend loses every session it has seen.
    func setUp(_ mode: ClientResetMode, recoverable: Bool = true) async throws -> Setup {
        let dir = try TemporaryDirectory()
        let backend = try TestBackend(["--api-key", "k"])
        let user = try await makeApp(backend, dir).login(credentials: .apiKey("k"))
        var configuration = user.configuration(clientResetMode: mode)
        configuration.objectTypes = [WeatherSensor.self]
        configuration.upload.lingerMilliseconds = 0
        let realm = try await IngestRealm(configuration: configuration)
        try writeSensors(realm, 5, from: 0)
        try await realm.waitForUpload()
        try backend.control("lose-sessions", body: recoverable ? "" : #"{"recoverable":false}"#)
        return Setup(dir: dir, backend: backend, realm: realm)
    }

    @Test func recoverReuploadsThePendingRecordsUnderANewSession() async throws {
        let s = try await setUp(.recoverUnsyncedChanges())
        try writeSensors(s.realm, 7, from: 5)
        try await s.realm.waitForUpload()
        let stats = try s.backend.stats()
        #expect(stats["unique"] as? Int == 12)
        #expect(stats["reset_demands"] as? Int ?? 0 >= 1)
        #expect((stats["sessions"] as? [String])?.count == 2)
        #expect(try s.realm.statistics().droppedByReason.isEmpty)
    }

    @Test func discardBacksUpThePendingRecordsThenDropsThemAndResumes() async throws {
        let backupPath = Mutex<String?>(nil)
        let seen = Mutex<(before: Int64, after: Int64)?>(nil)
        let backupDir = try TemporaryDirectory()
        let backupFile = backupDir.file("recovered.ingest.sqlite")
        // The seeds' discardUnsyncedChanges example: a backup copy in `before`, a look at both in `after`.
        let s = try await setUp(
            .discardUnsyncedChanges(
                { before in
                    var recovery = IngestConfiguration()
                    recovery.fileURL = URL(fileURLWithPath: backupFile)
                    recovery.objectTypes = [WeatherSensor.self]
                    if (try? before.writeCopy(configuration: recovery)) != nil {
                        backupPath.withLock { $0 = backupFile }
                    }
                },
                { before, after in
                    seen.withLock {
                        $0 = (
                            (try? before.statistics().queuedRecords) ?? -1,
                            (try? after.statistics().queuedRecords) ?? -1
                        )
                    }
                }
            )
        )
        try writeSensors(s.realm, 7, from: 5)
        #expect(eventually { (try? s.realm.statistics().droppedByReason["client_reset"]) == 7 })
        #expect(eventually { seen.withLock { $0 } != nil }, "the after hook ran")
        #expect(seen.withLock { $0 }?.before == 7)
        #expect(seen.withLock { $0 }?.after == 0)
        // The backup holds the 7 discarded records.
        var backup = IngestConfiguration()
        backup.fileURL = URL(fileURLWithPath: try #require(backupPath.withLock { $0 }))
        backup.objectTypes = [WeatherSensor.self]
        #expect(try await IngestRealm(configuration: backup).statistics().queuedRecords == 7)
        // Uploading resumed under a new session.
        try writeSensors(s.realm, 3, from: 12)
        try await s.realm.waitForUpload()
        #expect(try s.backend.stats()["unique"] as? Int == 8)
    }

    @Test(arguments: [true, false])
    func recoverOrDiscardRecoversWhenItCanAndDiscardsWhenItCannot(recoverable: Bool) async throws {
        let s = try await setUp(.recoverOrDiscardUnsyncedChanges(), recoverable: recoverable)
        try writeSensors(s.realm, 4, from: 5)
        #expect(eventually { (try? s.realm.statistics().queuedRecords) == 0 })
        let unique = try s.backend.stats()["unique"] as? Int
        #expect(unique == (recoverable ? 9 : 5))
        #expect(try s.realm.statistics().droppedByReason["client_reset"] == (recoverable ? nil : 4))
    }

    @Test func manualKeepsEverythingUntilTheApplicationResolvesIt() async throws {
        let reported = Mutex<[String]>([])
        let s = try await setUp(.manual(errorHandler: { error, _ in reported.withLock { $0.append("\(error.code)") } }))
        try writeSensors(s.realm, 6, from: 5)
        #expect(eventually { s.realm.pendingClientReset != nil })
        // The handler runs just after the reset is marked pending (so it may resolve it at once).
        #expect(eventually { reported.withLock { $0 } == ["client_reset_required"] })
        #expect(try s.realm.statistics().queuedRecords == 6)
        #expect(eventually { s.realm.uploadState?.state == .error })
        try s.realm.resolveClientReset(discard: false)
        try await s.realm.waitForUpload(timeout: .seconds(10))
        #expect(try s.backend.stats()["unique"] as? Int == 11)
        #expect(s.realm.pendingClientReset == nil)
    }

    @Test func aRecoveredSessionThatIsRefusedTooFallsBackToManualInsteadOfLooping() async throws {
        let s = try await setUp(.recoverUnsyncedChanges())
        try s.backend.control("refuse-all-sessions")
        try writeSensors(s.realm, 3, from: 5)
        #expect(eventually { s.realm.pendingClientReset != nil })
        // One demand recovered, the next (new session, nothing stored) went manual.
        #expect(try s.backend.stats()["reset_demands"] as? Int == 2)
        #expect(try s.realm.statistics().queuedRecords == 3)
    }

    @Test func aRecoveryTheBackendRulesOutFallsBackToManualAndTheGlobalHandler() async throws {
        // SyncManager.errorHandler is process-wide: other suites' tests set it too.
        try await withProcessWideState {
            let reported = Mutex<[String]>([])
            SyncManager.errorHandler = { error, user in
                reported.withLock { $0.append("\(error.code) \(user?.id ?? "-")") }
            }
            defer { SyncManager.errorHandler = nil }
            let s = try await setUp(.recoverUnsyncedChanges(), recoverable: false)
            try writeSensors(s.realm, 2, from: 5)
            #expect(eventually { s.realm.pendingClientReset != nil })
            #expect(eventually { reported.withLock { $0 }.contains("client_reset_required key-0") })
            #expect(try s.realm.statistics().queuedRecords == 2)
            // The operator chooses to discard, with a backup.
            var backup = IngestConfiguration()
            backup.fileURL = URL(fileURLWithPath: s.dir.file("backup.ingest.sqlite"))
            backup.objectTypes = [WeatherSensor.self]
            try s.realm.resolveClientReset(discard: true, backup: backup)
            #expect(try s.realm.statistics().droppedByReason["client_reset"] == 2)
            #expect(try await IngestRealm(configuration: backup).statistics().queuedRecords == 2)
        }
    }
}
