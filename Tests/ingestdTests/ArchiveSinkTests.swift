import Foundation
import TestSupport
import Testing

/// `upload.sink = "sqlite"`: ingestd as its own backend, through the built
/// binary. kill -9 over the archive is the fault suite's `archive` scenario
/// (FaultSuiteTests).
@Suite struct ArchiveSinkTests {
    @Test func pipedReadingsEndUpInTheArchiveOnceAndLeaveTheQueue() throws {
        let probe = try TemporaryDirectory()
        let archive = probe.file("archive.sqlite")
        let fixture = try AgentFixture(
            "\n[upload]\nsink = \"sqlite\"\npath = \"\(archive)\"\nlinger_ms = 20\nmax_records = 400\n"
        )
        let readings = (0..<2500).map { reading($0 % 40, device: "A\($0)") + "\n" }.joined() + "not json\n"
        let result = try fixture.run(["run"], stdin: Data(readings.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("SQLite archive \(archive)"), "\(result.stderr.suffix(2000))")
        #expect(
            try sqlite3(archive, "SELECT count(*), count(DISTINCT _id), count(DISTINCT deviceId) FROM WeatherSensor")
                == "2500|2500|2500"
        )
        #expect(
            try sqlite3(
                archive,
                "SELECT typeof(windSpeedInMph), typeof(temperatureInFahrenheit) FROM WeatherSensor LIMIT 1"
            ) == "integer|real"
        )
        let status = try fixture.status()
        #expect(status["queued_records"] as? Int == 0)
        #expect(status["uploaded_total"] as? Int == 2500)
        #expect(status["rejected_total"] as? Int == 1)
        #expect(try fixture.queuedLines().isEmpty)
    }

    /// Only a repeated `_id` is skipped: a row the table's own rules refuse
    /// (here a CHECK an operator added) is a dead letter with SQLite's
    /// message, not a reading counted as uploaded that is not there.
    @Test func aRowTheArchiveRefusesIsADeadLetterNotAnUpload() throws {
        let probe = try TemporaryDirectory()
        let archive = probe.file("archive.sqlite")
        _ = try sqlite3(
            archive,
            """
            CREATE TABLE WeatherSensor("_id" TEXT PRIMARY KEY NOT NULL, deviceId TEXT NOT NULL,
              temperatureInFahrenheit REAL CHECK (temperatureInFahrenheit < 100), barometricPressureInHg REAL,
              windSpeedInMph INTEGER);
            """
        )
        let fixture = try AgentFixture(
            "\n[upload]\nsink = \"sqlite\"\npath = \"\(archive)\"\nlinger_ms = 20\n"
        )
        let hot =
            #"{"deviceId":"HOT","temperatureInFahrenheit":140.5,"barometricPressureInHg":29.6,"windSpeedInMph":1}"#
        let readings = (0..<10).map { reading($0, device: "A\($0)") + "\n" }.joined() + hot + "\n"
        let result = try fixture.run(["run"], stdin: Data(readings.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try sqlite3(archive, "SELECT count(*) FROM WeatherSensor") == "10")
        let status = try fixture.status()
        #expect(status["uploaded_total"] as? Int == 10)
        #expect(status["dead_letter_records"] as? Int == 1)
        let letters = try fixture.run(["dead-letter", "list"])
        #expect(letters.stdout.contains("CHECK constraint failed"), "\(letters.stdout)")
    }

    @Test func checkConfigShowsTheArchive() throws {
        let fixture = try AgentFixture(
            "\n[upload]\nsink = \"sqlite\"\npath = \"/srv/archive.sqlite\"\nmax_records = 300\n"
        )
        let result = try fixture.run(["check-config"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains("  upload: SQLite archive /srv/archive.sqlite, 300 records per batch"),
            "\(result.stdout)"
        )
    }

    @Test func checkConfigNamesWhatASinkNeedsAndWhatItIgnores() throws {
        let cases: [(upload: String, expected: String)] = [
            ("sink = \"sqlite\"", "upload.path: is required with sink = \"sqlite\""),
            (
                "sink = \"sqlite\"\npath = \"/tmp/a.sqlite\"\nurl = \"http://x\"\ngzip = true",
                "upload.gzip: only applies to HTTP sinks; sink = \"sqlite\" writes to upload.path"
            ),
            (
                "sink = \"kafka\"",
                "upload.sink: must be one of ingest, sqlite, clickhouse, postgresql, influxdb, mqtt, jetstream, got \"kafka\""
            ),
            (
                "url = \"http://127.0.0.1:9/\"\npath = \"/tmp/a.sqlite\"",
                "upload.path: is for sink = \"sqlite\"; this [upload] has sink = \"ingest\""
            ),
            (
                "sink = \"clickhouse\"\nurl = \"http://127.0.0.1:8123/\"\ntable = \"weather; DROP\"",
                "upload.table: must be a plain name"
            ),
            ("sink = \"clickhouse\"", "upload.url: is required in [upload]"),
            (
                "sink = \"influxdb\"\nurl = \"http://127.0.0.1:8086/write?db=t\"\ntags = [\"site\"]",
                "upload.tags: names 'site', which no record type under [types] declares"
            ),
            (
                "sink = \"influxdb\"\nurl = \"http://127.0.0.1:8086/write?db=t\"\ntimestamp = \"deviceId\"",
                "upload.timestamp: must name a field of type timestamp"
            ),
            (
                "sink = \"influxdb\"\nurl = \"http://127.0.0.1:8086/write?db=t&precision=ms\"",
                "upload.url: must not set precision="
            ),
            (
                "sink = \"influxdb\"\nurl = \"http://127.0.0.1:8086/write?db=t\"\nmeasurement = \"_w\"",
                "upload.measurement: must be a name not starting with _"
            ),
        ]
        for (upload, expected) in cases {
            let fixture = try AgentFixture("\n[upload]\n" + upload + "\n")
            let result = try fixture.run(["check-config"])
            #expect(result.status == 78, "\(upload)")
            #expect(result.stderr.contains(expected), "\(upload) → \(result.stderr)")
        }
        let both = try AgentFixture("\n[upload]\nsink = \"sqlite\"\npath = \"/tmp/a.sqlite\"\nurl = \"http://x\"\n")
        #expect(
            try both.run(["check-config"]).stderr.contains("upload.url: only applies to HTTP sinks; sink = \"sqlite\"")
        )
    }
}
