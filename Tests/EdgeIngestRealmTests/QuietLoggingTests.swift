import EdgeIngestRealm
import Logging
import Synchronization
import TestSupport
import Testing

/// The library logs only through the Logger it is given (`Realm.logger`,
/// or IngestRealm's `logger:`), and routine events at debug: an app that
/// did not ask for logs (swift-log's default handler shows info and up)
/// sees nothing while all goes well.
@Suite(.serialized) struct QuietLoggingTests {
    final class Captured: LogHandler, @unchecked Sendable {
        let entries = Mutex<[(level: Logger.Level, message: String)]>([])
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            entries.withLock { $0.append((event.level, "\(event.message)")) }
        }
    }

    @Test func openingWritingUploadingAndReleasingLogOnlyAtDebug() async throws {
        let gateway = try GatewayProcess(types: seedTypesTOML)
        let dir = try TemporaryDirectory()
        let captured = Captured()
        // The logger is given to this realm only (Realm.logger is process-wide,
        // and other suites' realms run at the same time).
        let logger = Logger(label: "test") { _ in captured }

        let app = App(
            id: GatewayProcess.appID,
            configuration: AppConfiguration(baseURL: gateway.baseURL, metadataDirectory: dir.path)
        )
        let user = try await app.login(credentials: .anonymous)
        var configuration = user.configuration()
        configuration.objectTypes = [WeatherSensor.self]
        configuration.shouldCompactOnLaunch = { _, _ in true }  // a compaction on launch is routine too
        do {
            let realm = try await IngestRealm(configuration: configuration, logger: logger)
            try realm.write { try $0.create(WeatherSensor.self, value: DataIngestSeedTests.reading(wind: 1)) }
            try await realm.waitForUpload()
            // A copy's queue logs through the realm's logger too (its compaction here).
            var copy = IngestConfiguration()
            copy.filePath = dir.file("copy.ingest.sqlite")
            copy.objectTypes = [WeatherSensor.self]
            copy.shouldCompactOnLaunch = { _, _ in true }
            var local = IngestConfiguration()
            local.filePath = dir.file("local.ingest.sqlite")
            local.objectTypes = [WeatherSensor.self]
            let localRealm = try await IngestRealm(configuration: local, logger: logger)
            try localRealm.writeCopy(configuration: copy)
        }
        #expect(gateway.waitUntilArchived(1) == 1)
        let entries = captured.entries.withLock { $0 }
        // Routine events were logged, through the given logger, at debug...
        #expect(entries.contains { $0.level == .debug && $0.message == "Uploading to the sink" }, "\(entries)")
        #expect(entries.contains { $0.level == .debug && $0.message == "Uploader stopped" }, "\(entries)")
        #expect(entries.filter { $0.level == .debug && $0.message == "Compacted the queue file on launch" }.count == 2)
        // ...and nothing at info or above.
        let loud = entries.filter { $0.level >= .info }
        #expect(loud.isEmpty, "\(loud)")
    }
}
