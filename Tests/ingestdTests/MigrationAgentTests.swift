import Foundation
import TestSupport
import Testing

/// `[[migrations]]` against the built binary.
@Suite struct MigrationAgentTests {
    func config(_ dir: TemporaryDirectory, version: Int, types: String, migrations: String = "") throws -> String {
        let path = dir.file("ingestd-v\(version).toml")
        try """
        [agent]
        state_directory = "\(dir.file("state"))"
        log_target = "stderr"
        [queue]
        schema_version = \(version)
        \(migrations)
        [types.WeatherSensor]
        \(types)
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func raisingTheSchemaVersionMigratesQueuedReadingsDeclaratively() throws {
        let dir = try TemporaryDirectory()
        let v0 = try config(
            dir,
            version: 0,
            types: "deviceId = \"string\"\nwindSpeedInMph = \"int\"\nbarometricPressureInHg = \"double\""
        )
        let lines = (0..<4).map {
            #"{"deviceId":"WX\#($0)","windSpeedInMph":\#($0),"barometricPressureInHg":29.5}"# + "\n"
        }.joined()
        let first = try IngestdBinary.run(["run", "--config", v0], stdin: Data(lines.utf8))
        #expect(first.status == 0, "\(first.stderr)")

        let steps = """
            [[migrations]]
            schema_version = 1
            rename = { windSpeedInMph = "windSpeed" }
            drop = ["barometricPressureInHg"]
            [[migrations]]
            schema_version = 2
            type = "WeatherSensor"
            default = { unit = "imperial" }
            """
        let v2Types = "deviceId = \"string\"\nwindSpeed = \"int\"\nunit = \"string\""
        // A step above queue.schema_version is a configuration error.
        let tooHigh = try config(dir, version: 1, types: v2Types, migrations: steps)
        let check = try IngestdBinary.run(["check-config", "--config", tooHigh])
        #expect(check.status == 78)
        #expect(check.stderr.contains("migrations[1].schema_version"))

        let v2 = try config(dir, version: 2, types: v2Types, migrations: steps)
        let second = try IngestdBinary.run(["run", "--config", v2], stdin: Data())
        #expect(second.status == 0, "\(second.stderr)")
        let fixture = try AgentFixture()
        let queued = try fixture.queuedLinesAt(
            dir.file("state/queue.sqlite"),
            fields: ["deviceId": .string, "windSpeed": .int, "unit": .string],
            schemaVersion: 2
        )
        #expect(queued.count == 4)
        #expect(
            queued.allSatisfy {
                $0.contains(#""unit":"imperial""#) && $0.contains(#""windSpeed":"#) && !$0.contains("barometric")
            }
        )

        // Back to version 0: refused, nothing changed.
        let before = try #require(FileManager.default.contents(atPath: dir.file("state/queue.sqlite")))
        let back = try IngestdBinary.run(["run", "--config", v0], stdin: Data())
        #expect(back.status == 78)
        #expect(back.stderr.contains("newer than the configured 0"))
        #expect(FileManager.default.contents(atPath: dir.file("state/queue.sqlite")) == before)
    }

    /// A migration that cannot convert the queued readings is the
    /// configuration's to fix: exit 78 (not 74, an I/O error), the record
    /// named, nothing changed.
    @Test func aMigrationThatCannotConvertTheQueueExits78AndChangesNothing() throws {
        let dir = try TemporaryDirectory()
        let v0 = try config(dir, version: 0, types: "deviceId = \"string\"")
        let first = try IngestdBinary.run(["run", "--config", v0], stdin: Data(#"{"deviceId":"WX1"}"#.utf8 + [10]))
        #expect(first.status == 0, "\(first.stderr)")
        let before = try #require(FileManager.default.contents(atPath: dir.file("state/queue.sqlite")))
        // Version 1 requires a field the queued reading lacks, with no default.
        let v1 = try config(
            dir,
            version: 1,
            types: "device = \"string\"\nunit = \"string\"",
            migrations: "[[migrations]]\nschema_version = 1\nrename = { deviceId = \"device\" }"
        )
        let result = try IngestdBinary.run(["run", "--config", v1], stdin: Data())
        #expect(result.status == 78, "\(result.stderr.suffix(800))")
        #expect(result.stderr.contains("Migrating record"), "\(result.stderr.suffix(800))")
        #expect(result.stderr.contains("Nothing was changed"))
        #expect(FileManager.default.contents(atPath: dir.file("state/queue.sqlite")) == before)
        // Nor in the log beside it: no committed frame waits there.
        let wal = FileManager.default.contents(atPath: dir.file("state/queue.sqlite-wal")) ?? Data()
        #expect(wal.isEmpty, "\(wal.count) bytes in the WAL")
    }
}
