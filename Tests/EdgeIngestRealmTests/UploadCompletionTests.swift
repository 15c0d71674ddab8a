import EdgeIngestRealm
import Synchronization
import TestSupport
import Testing

/// `syncSession.wait(for: .upload)`, the session's state and upload
/// progress, as a Realm app uses them, against a gateway.
@Suite struct UploadCompletionTests {
    /// The `realm-upload-example` program built beside the tests.
    static var example: String {
        var dir = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("realm-upload-example").path),
            dir.path != "/"
        {
            dir.deleteLastPathComponent()
        }
        return dir.appendingPathComponent("realm-upload-example").path
    }

    static func reading(_ i: Int) -> [String: Any] {
        [
            "deviceId": "WX\(i % 7)", "temperatureInFahrenheit": Double.random(in: 40...90),
            "barometricPressureInHg": 29.65, "windSpeedInMph": i,
        ]
    }

    /// A user of `gateway` and a synced configuration on a file in `dir`.
    static func configuration(
        _ gateway: GatewayProcess,
        _ dir: TemporaryDirectory
    ) async throws -> (User, Realm.Configuration) {
        let app = App(
            id: GatewayProcess.appID,
            configuration: AppConfiguration(baseURL: gateway.baseURL, metadataDirectory: dir.path)
        )
        let user = try await app.login(credentials: .anonymous)
        var config = user.flexibleSyncConfiguration()
        config.objectTypes = [WeatherSensor.self]
        return (user, config)
    }

    /// What the program's file still holds once it exited.
    static func queuedIn(_ dir: TemporaryDirectory) async throws -> Int64 {
        var local = IngestConfiguration()
        local.filePath = dir.file("readings.realm")
        local.objectTypes = [WeatherSensor.self]
        return try await IngestRealm(configuration: local).statistics().queuedRecords
    }

    @Test func aProgramThatWaitsForTheUploadBeforeExitingLeavesNothingBehind() async throws {
        let gateway = try GatewayProcess(types: seedTypesTOML)
        let dir = try TemporaryDirectory()
        let run = try runTool(Self.example, [gateway.baseURL, dir.path, "1000"])
        #expect(run.status == 0 && run.output.contains("uploaded 1000 readings"), "\(run.output)")
        // The program has exited: what the gateway holds is what it confirmed before.
        #expect(gateway.waitUntilArchived(1000) == 1000, "\(gateway.stderr.suffix(2000))")
        #expect(try Set(gateway.archivedIDs()).count == 1000)
        #expect(try await Self.queuedIn(dir) == 0)  // nothing left for a next launch
    }

    @Test func withoutTheWaitTheReadingsStayOnTheDeviceUntilTheNextLaunch() async throws {
        let gateway = try GatewayProcess(types: seedTypesTOML)
        let dir = try TemporaryDirectory()
        let run = try runTool(Self.example, [gateway.baseURL, dir.path, "1000", "--no-wait"])
        #expect(run.status == 0 && run.output.contains("without waiting"), "\(run.output)")
        // Kept, not lost: all 1,000 are in the file, none reached the gateway.
        #expect(try await Self.queuedIn(dir) == 1000)
        try await _Concurrency.Task.sleep(for: .milliseconds(500))
        #expect(try gateway.archivedIDs().isEmpty)
    }

    @Test func waitReturnsOnceEverythingWrittenBeforeWasConfirmedEvenWhileABatchLingers() async throws {
        let gateway = try GatewayProcess(types: seedTypesTOML)
        let dir = try TemporaryDirectory()
        var (_, config) = try await Self.configuration(gateway, dir)
        // A partial batch would wait a minute for more readings: the wait sends it at once.
        config.ingestConfiguration.upload.lingerMilliseconds = 60_000
        let realm = try await Realm(configuration: config)
        #expect(realm.syncSession?.state == .active)
        try realm.write { for i in 0..<300 { realm.create(WeatherSensor.self, value: Self.reading(i)) } }
        let session = try #require(realm.syncSession)
        try await withDeadline(seconds: 60) { try await session.wait(for: .upload) }
        let statistics = try realm.ingestRealm.statistics()
        #expect(statistics.queuedRecords == 0 && statistics.acknowledgedTotal == 300)
        #expect(session.connectionState == .connected)
        // The callback form, on a queue, with nothing left to wait for; .download has nothing to wait for.
        let answered = Mutex<[String]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            session.wait(for: .upload, queue: DispatchQueue(label: "app")) { error in
                answered.withLock { $0.append("upload: \(error.map { "\($0)" } ?? "done")") }
                done.resume()
            }
        }
        try await session.wait(for: .download)
        #expect(answered.withLock { $0 } == ["upload: done"])
    }

    @Test func progressForTheOutstandingWorkRisesToOneThenStops() async throws {
        let gateway = try GatewayProcess(types: seedTypesTOML)
        let dir = try TemporaryDirectory()
        var (_, config) = try await Self.configuration(gateway, dir)
        config.ingestConfiguration.upload.maxRecords = 50  // ten batches: ten steps
        config.ingestConfiguration.upload.lingerMilliseconds = 60_000
        let realm = try await Realm(configuration: config)
        let session = try #require(realm.syncSession)
        try realm.write { for i in 0..<500 { realm.create(WeatherSensor.self, value: Self.reading(i)) } }
        let outstanding = Mutex<[SyncSession.Progress]>([])
        let everything = Mutex<[SyncSession.Progress]>([])
        let outstandingToken = session.addProgressNotification(for: .upload, mode: .forCurrentlyOutstandingWork) {
            progress in outstanding.withLock { $0.append(progress) }
        }
        let indefiniteToken = session.addProgressNotification(for: .upload, mode: .reportIndefinitely) {
            progress in everything.withLock { $0.append(progress) }
        }
        #expect(outstandingToken != nil && indefiniteToken != nil)
        try await withDeadline(seconds: 60) { try await session.wait(for: .upload) }
        let seen = outstanding.withLock { $0 }
        #expect(seen.count >= 3, "\(seen)")
        #expect(seen.first?.isTransferComplete == false && seen.last?.isTransferComplete == true)
        #expect(seen.map(\.transferrableBytes).allSatisfy { $0 == seen[0].transferrableBytes && $0 > 0 })
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.transferredBytes <= $1.transferredBytes })
        #expect(seen.last?.transferredBytes == seen.last?.transferrableBytes)
        // The outstanding-work block was removed after its last call; the indefinite one goes on until invalidated.
        indefiniteToken?.invalidate()
        let calls = (outstanding.withLock { $0.count }, everything.withLock { $0.count })
        #expect(everything.withLock { $0.last?.isTransferComplete } == true)
        try realm.write { for i in 0..<100 { realm.create(WeatherSensor.self, value: Self.reading(i)) } }
        try await withDeadline(seconds: 60) { try await session.wait(for: .upload) }
        #expect(outstanding.withLock { $0.count } == calls.0 && everything.withLock { $0.count } == calls.1)
        // A block may invalidate its own token from inside (Realm's users do,
        // once complete): on the upload thread, without waiting for itself.
        let selfCancelling = Mutex<Int>(0)
        let holder = Mutex<SyncSession.ProgressNotificationToken?>(nil)
        let token = session.addProgressNotification(for: .upload, mode: .reportIndefinitely) { _ in
            selfCancelling.withLock { $0 += 1 }
            holder.withLock { $0 }?.invalidate()
        }
        holder.withLock { $0 = token }  // after the first call, made while registering
        for round in 0..<2 {
            try realm.write {
                for i in 0..<10 { realm.create(WeatherSensor.self, value: Self.reading(1_000 * round + i)) }
            }
            try await withDeadline(seconds: 60) { try await session.wait(for: .upload) }
        }
        #expect(selfCancelling.withLock { $0 } == 2)  // registering, then the first batch: it cancelled itself there
        // A write-only realm downloads nothing: done at once, no token.
        let download = Mutex<Double?>(nil)
        #expect(
            session.addProgressNotification(for: .download, mode: .reportIndefinitely) { progress in
                download.withLock { $0 = progress.progressEstimate }
            } == nil
        )
        #expect(download.withLock { $0 } == 1)
    }

    @Test func aWaitEndsWithAnErrorWhenTheUserLogsOutAndTheRecordsStay() async throws {
        var gateway: GatewayProcess? = try GatewayProcess(types: seedTypesTOML)
        let dir = try TemporaryDirectory()
        let (user, config) = try await Self.configuration(gateway!, dir)
        let realm = try await Realm(configuration: config)
        gateway = nil  // the backend is gone: uploads back off
        try realm.write { for i in 0..<10 { realm.create(WeatherSensor.self, value: Self.reading(i)) } }
        let session = try #require(realm.syncSession)
        let waiting = _Concurrency.Task { try await withDeadline(seconds: 60) { try await session.wait(for: .upload) } }
        try await _Concurrency.Task.sleep(for: .milliseconds(200))
        try await user.logOut()
        await #expect {
            try await waiting.value
        } throws: { error in
            let error = error as? Realm.Error
            return error?.ingestCode == .authenticationFailed && error!.localizedDescription.contains("logged out")
                && error!.localizedDescription.contains("10 records")
        }
        #expect(session.state == .inactive)  // as in Realm: logged out is inactive
        #expect(try realm.ingestRealm.statistics().queuedRecords == 10)
        _ = gateway
    }

    @Test func recordsThatLeaveWithoutReachingTheBackendEndTheWaitWithAnErrorCountingThem() async throws {
        // A backend that answers every batch 403: uploads are held (a hold does not end a wait).
        let backend = try TestBackend(["--always-status", "403"])
        let dir = try TemporaryDirectory()
        let app = App(
            id: "weather",
            configuration: AppConfiguration(baseURL: backend.baseURL, metadataDirectory: dir.path)
        )
        var config = try await app.login(credentials: .anonymous).flexibleSyncConfiguration()
        config.objectTypes = [WeatherSensor.self]
        config.ingestConfiguration.queue.maxRecords = 100
        config.ingestConfiguration.queue.overflowPolicy = .dropOldest
        let realm = try await Realm(configuration: config)
        try realm.write { for i in 0..<100 { realm.create(WeatherSensor.self, value: Self.reading(i)) } }
        let session = try #require(realm.syncSession)
        let started = Mutex(false)
        let waiting = _Concurrency.Task {
            started.withLock { $0 = true }
            return try await withDeadline(seconds: 60) { try await session.wait(for: .upload) }
        }
        // Held on the 403, and the wait under way (it has taken its mark of
        // what was written before it: a task may start late on a busy machine).
        for _ in 0..<3_000 where !(session.state == .inactive && started.withLock { $0 }) {
            try await _Concurrency.Task.sleep(for: .milliseconds(10))
        }
        #expect(session.state == .inactive)
        try await _Concurrency.Task.sleep(for: .milliseconds(300))
        // A full queue under drop_oldest makes room: the 100 waited for are dropped.
        try realm.write { for i in 100..<200 { realm.create(WeatherSensor.self, value: Self.reading(i)) } }
        await #expect {
            try await waiting.value
        } throws: { error in
            let error = error as? Realm.Error
            return error?.ingestCode == .notUploaded
                && error!.localizedDescription.contains("100 records left the queue without reaching the backend")
                && error!.localizedDescription.contains("overflow_drop_oldest: 100")
        }
        #expect(try realm.ingestRealm.statistics().droppedByReason["overflow_drop_oldest"] == 100)
    }
}
