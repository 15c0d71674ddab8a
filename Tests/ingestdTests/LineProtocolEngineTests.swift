import Foundation
import TestSupport
import Testing

/// `upload.sink = "influxdb"` through the built binary into a real InfluxDB
/// 1.6 and a real VictoriaMetrics 1.79 (Debian 12's, started by the test):
/// N distinct readings become N points with their values, also when sent
/// twice; and the configuration that collapsed them (issue 27: 100,000
/// readings, 1,000 samples in VictoriaMetrics, "100000 uploaded") is
/// refused before anything is read.
@Suite struct LineProtocolEngineTests {
    /// An agent whose WeatherSensor readings carry the time they were taken.
    struct TimedAgent {
        let dir: TemporaryDirectory
        let configPath: String

        init(upload: String) throws {
            dir = try TemporaryDirectory()
            configPath = dir.file("ingestd.toml")
            try """
            [agent]
            state_directory = "\(dir.file("state"))"
            rejects_file = "\(dir.file("rejects.ndjson"))"
            log_target = "stderr"
            status_interval_ms = 100

            [types.WeatherSensor]
            deviceId = "string"
            temperatureInFahrenheit = "double"
            barometricPressureInHg = "double"
            windSpeedInMph = "int"
            takenAt = "timestamp"

            [[inputs]]
            kind = "stdin"

            [upload]
            sink = "influxdb"
            measurement = "weather"
            tags = ["deviceId"]
            gzip = true
            linger_ms = 20
            retry_base_ms = 20
            retry_cap_ms = 200
            \(upload)
            """.write(toFile: configPath, atomically: true, encoding: .utf8)
        }

        func run(_ stdin: String) throws -> IngestdBinary.Result {
            try IngestdBinary.run(["run", "--config", configPath], stdin: Data(stdin.utf8))
        }

        func status() throws -> [String: Any] {
            let result = try IngestdBinary.run(["status", "--json", "--config", configPath])
            return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as! [String: Any]
        }
    }

    /// One reading and the point it must become.
    struct Reading {
        var device: String
        var milliseconds: Int64
        var temperature: Double
        var pressure: Double
        var wind: Int

        var json: String {
            #"{"deviceId":"\#(device)","temperatureInFahrenheit":\#(temperature),"barometricPressureInHg":\#(pressure),"windSpeedInMph":\#(wind),"takenAt":"\#(Self.iso8601(milliseconds))"}"#
        }

        static func iso8601(_ milliseconds: Int64) -> String {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
        }
    }

    /// `n` distinct readings from 3 devices with agent-made `_id`s, all in
    /// one second: each device reads every millisecond, so times from the
    /// `_id` (1,000 per second, shared by the devices' interleaved ids) could
    /// not have told them apart in VictoriaMetrics. A minute ago: well
    /// inside both engines' retention.
    static func readings(_ n: Int) -> [Reading] {
        let second = (Int64(Date().timeIntervalSince1970) - 60) * 1000
        return (0..<n).map { i in
            Reading(
                device: "WX\(i % 3)",
                milliseconds: second + Int64(i / 3),
                temperature: 40.25 + Double(i) * 0.5,
                pressure: 29.5 + Double(i % 7) * 0.125,
                wind: i % 40
            )
        }
    }

    static func text(_ readings: [Reading]) -> String { readings.map { $0.json + "\n" }.joined() }

    @Test(.enabled(if: serverTestsEnabled(InfluxDBServer.executable), "needs influxd (Debian: influxdb)"))
    func influxDBStoresEveryDistinctReadingAsOnePoint() throws {
        let server = try InfluxDBServer()
        try server.query("CREATE DATABASE telemetry")
        let agent = try TimedAgent(upload: "url = \"\(server.writeURL(database: "telemetry"))\"\nmax_records = 500")
        let n = 3000
        let readings = Self.readings(n)
        let first = try agent.run(Self.text(readings))
        #expect(first.status == 0, "\(first.stderr.suffix(2000))")
        let status = try agent.status()
        #expect(status["uploaded_total"] as? Int == n)
        #expect(status["queued_records"] as? Int == 0)
        #expect(status["dead_letter_records"] as? Int == 0)
        // Sent again (a re-send after a crash): a point overwrites itself.
        let second = try agent.run(Self.text(readings))
        #expect(second.status == 0, "\(second.stderr.suffix(2000))")
        let rows = try server.rows("SELECT * FROM weather", database: "telemetry")
        func number(_ value: Any?) -> Double { (value as? NSNumber)?.doubleValue ?? .nan }
        let stored = rows.map { row in
            "\(row["deviceId"] ?? "-") \(number(row["time"])) \(number(row["temperatureInFahrenheit"])) \(number(row["barometricPressureInHg"])) \(number(row["windSpeedInMph"]))"
        }.sorted()
        let expected = readings.map {
            "\($0.device) \(Double($0.milliseconds)) \($0.temperature) \($0.pressure) \(Double($0.wind))"
        }.sorted()
        let difference = difference(stored: stored, expected: expected)
        #expect(difference.isEmpty, "points in InfluxDB \(server.version): \(difference)")
    }

    @Test(.enabled(if: serverTestsEnabled(VictoriaMetricsServer.executable), "needs victoria-metrics"))
    func victoriaMetricsStoresEveryDistinctReadingAsOneSample() throws {
        // One sample per series and millisecond, so a re-sent point is not stored twice (docs/SINKS.md).
        let server = try VictoriaMetricsServer(["-dedup.minScrapeInterval=1ms"])
        let agent = try TimedAgent(upload: "url = \"\(server.writeURL)\"\nmax_records = 500")
        let n = 3000
        let readings = Self.readings(n)
        let first = try agent.run(Self.text(readings))
        #expect(first.status == 0, "\(first.stderr.suffix(2000))")
        let status = try agent.status()
        #expect(status["uploaded_total"] as? Int == n)
        #expect(status["queued_records"] as? Int == 0)
        let second = try agent.run(Self.text(readings))
        #expect(second.status == 0, "\(second.stderr.suffix(2000))")
        // Each field is a metric of its own: weather_<field>{deviceId=…}.
        let fields: [(name: String, value: (Reading) -> Double)] = [
            ("temperatureInFahrenheit", \.temperature), ("barometricPressureInHg", \.pressure),
            ("windSpeedInMph", { Double($0.wind) }),
        ]
        for field in fields {
            let expected = readings.map { "\($0.device) \($0.milliseconds) \(field.value($0))" }.sorted()
            var stored: [String] = []
            // Written samples become searchable within about a second.
            _ = try eventually(timeout: 15) {
                try server.flush()
                stored = try server.export("weather_\(field.name)").map {
                    "\($0.labels["deviceId"] ?? "-") \($0.milliseconds) \($0.value)"
                }.sorted()
                return stored.count >= n
            }
            let difference = difference(stored: stored, expected: expected)
            #expect(difference.isEmpty, "samples of weather_\(field.name) in \(server.version): \(difference)")
        }
    }

    /// Accepted before 0.2.0, refused (exit 78) after: an upgrade stopped
    /// the box collecting. check-config still refuses it; `run` collects
    /// and holds the upload, saying why (issue 38, point 8).
    @Test func aTypeWithoutATimestampHoldsUploadsButTheAgentCollects() throws {
        // The issue's configuration: AgentFixture's WeatherSensor has no timestamp field.
        let fixture = try AgentFixture(
            "\n[upload]\nsink = \"influxdb\"\nurl = \"http://127.0.0.1:9/write\"\ntags = [\"deviceId\"]\n"
        )
        let expected =
            "upload.timestamp: record type 'WeatherSensor' declares no timestamp field, so its points would have no time of their own"
        let check = try fixture.run(["check-config"])
        #expect(check.status == 78)
        #expect(check.stderr.contains(expected), "\(check.stderr)")
        #expect(check.stderr.contains("takenAt = \"timestamp\" under [types.WeatherSensor]"), "\(check.stderr)")
        #expect(check.stderr.contains("ingestd run still starts with these"), "\(check.stderr)")
        let run = try fixture.run(["run"], stdin: Data((reading(3) + "\n").utf8))
        #expect(run.status == 75, "the pipe ends with its reading queued: \(run.stderr)")
        #expect(run.stderr.contains("The configuration has problems that hold uploads"), "\(run.stderr)")
        #expect(run.stderr.contains("Uploader stopped with readings still queued"), "\(run.stderr)")
        #expect(try fixture.queuedLines().count == 1, "the reading was collected")
        // A running agent says it in status: uploads held, and why.
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(reading(4) + "\n")
        var status = IngestdBinary.Result(status: 0, stdout: "", stderr: "")
        #expect(
            eventually {
                status = (try? fixture.run(["status"])) ?? status
                return status.status == 1 && status.stdout.contains("declares no timestamp field")
            },
            "held uploads are unhealthy, and status says why: \(status.stdout)"
        )
        #expect(agent.terminate() == 0)
        #expect(agent.stderr.contains("Uploading is held"), "\(agent.stderr.suffix(2000))")
    }

    @Test func checkConfigShowsWhereEachPointsTimeComesFrom() throws {
        let agent = try TimedAgent(upload: "url = \"http://127.0.0.1:8086/write?db=t\"")
        let result = try IngestdBinary.run(["check-config", "--config", agent.configPath])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains(
                "  upload: line protocol http://127.0.0.1:8086/write?db=t, measurement weather, tags [deviceId], time from the first timestamp field, 4000 records per batch"
            ),
            "\(result.stdout)"
        )
    }

    @Test func aPasswordInTheURLIsNeverPrinted() throws {
        let agent = try TimedAgent(
            upload: "url = \"http://me:pw-in-userinfo-51@127.0.0.1:9/write?db=t&u=me&p=pw-in-query-51\""
        )
        let check = try IngestdBinary.run(["check-config", "--config", agent.configPath])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stdout.contains("http://me:***@127.0.0.1:9/write?db=t&u=me&p=***"), "\(check.stdout)")
        // The agent's log names its sink, and the connection error its URL.
        let reading = Reading(device: "A", milliseconds: 1_767_225_600_000, temperature: 1.5, pressure: 29.5, wind: 3)
        let run = try agent.run(reading.json + "\n")
        #expect(run.stderr.contains("line protocol http://me:***@127.0.0.1:9/"), "\(run.stderr.suffix(1500))")
        #expect(!check.stdout.contains("-51") && !run.stderr.contains("-51"), "\(run.stderr.suffix(1500))")
    }
}
