import EdgeIngestRealm
import Foundation
import Testing

// What the docs' Swift blocks use without declaring it (an app's own code).

/// An API key read from where the app keeps it.
let key = "an-api-key"
let APPID = "weather"
let myRecoveryPath = URL(fileURLWithPath: "/var/backups/recovered.realm")
func use<T>(_ value: T) {}
func showLogin() {}

/// The docs' blocks compile (the generated files are part of this target)
/// and the generated files are those of the docs as they are now.
@Suite struct DocSnippetTests {
    @Test func theGeneratedSnippetsMatchTheDocs() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", root.path + "/scripts/doc-snippets.py", "--check"]
        let output = Pipe()
        process.standardError = output
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
    }
}

/// The seeds' record type, for blocks that use it without declaring it.
class WeatherSensor: AsymmetricObject {
    @Persisted(primaryKey: true) var _id: ObjectId
    @Persisted var deviceId: String
    @Persisted var temperatureInFahrenheit: Float
    @Persisted var barometricPressureInHg: Float
    @Persisted var windSpeedInMph: Int
}
