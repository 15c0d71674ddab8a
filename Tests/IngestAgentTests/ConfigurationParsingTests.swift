import EdgeIngestCore
import Foundation
import TestSupport
import Testing

@testable import IngestAgent

/// The configuration decoder on text, section by section, without the
/// binary (`check-config` runs it as an operator would: CheckConfigTests).
@Suite struct ConfigurationParsingTests {
    static let types = """
        [types.WeatherSensor]
        deviceId = "string"
        temperature = "double"
        ts = "timestamp?"

        """
    static let environment = ["HOME": "/home/op"]

    static func parse(_ text: String, environment: [String: String] = environment) throws -> AgentConfiguration {
        try AgentConfiguration.parse(types + text, path: "test.toml", environment: environment)
    }

    /// The problems a text has, as `check-config` lists them (line numbers
    /// count the record types above the text: the text starts on line 5).
    static func problems(_ text: String) -> [String] {
        do {
            _ = try parse(text)
            return []
        } catch let error as ConfigurationError {
            return error.problems.map(\.description)
        } catch {
            return ["\(error)"]
        }
    }

    @Test func aFileWithOnlyTypesGetsEveryDefault() throws {
        let c = try Self.parse("")
        #expect(c.stateDirectory == "/home/op/.local/state/ingestd")
        #expect(c.inputs.map(\.kind) == [.stdin] && c.inputs[0].type == "WeatherSensor")
        #expect(c.queue.maxBytes == 256 << 20 && c.queue.maxRecords == nil)
        #expect(c.queue.overflowPolicy == .block && c.queue.durability == .powerLossSafe && c.queue.schemaVersion == 0)
        #expect(c.commitMaxRecords == 4000 && c.commitIntervalMilliseconds == 200)
        #expect(c.upload == nil && c.sink.name == "ingest" && c.uploadSummary == "none (readings stay queued)")
        #expect(c.logTarget == .auto && c.logLevel == "info" && c.statsIntervalSeconds == 60)
    }

    @Test func theQueueSectionFillsTheQueueSettingsTheQueueOpensWith() throws {
        let c = try Self.parse(
            """
            [queue]
            path = "/var/lib/q.sqlite"
            max_bytes = 4096
            max_records = 10
            overflow_policy = "drop_oldest"
            durability = "crash_safe"
            schema_version = 3
            """
        )
        let queue = c.queueConfiguration
        #expect(queue.location.path == "/var/lib/q.sqlite")
        #expect(queue.maxBytes == 4096 && queue.maxRecords == 10 && queue.schemaVersion == 3)
        #expect(queue.overflowPolicy == .dropOldest && queue.durability == .crashSafe)
        #expect(queue.settings.maxBytes == c.queue.maxBytes)
    }

    @Test func stateDirectoryComesFromSystemdThenXDG() throws {
        #expect(
            try Self.parse("", environment: ["STATE_DIRECTORY": "/var/lib/ingestd:/other"]).stateDirectory
                == "/var/lib/ingestd"
        )
        #expect(try Self.parse("", environment: ["XDG_STATE_HOME": "/x", "HOME": "/h"]).stateDirectory == "/x/ingestd")
    }

    @Test func everySinkIsChosenByNameWithItsOwnKeys() throws {
        let sqlite = try Self.parse("[upload]\nsink = \"sqlite\"\npath = \"archive.sqlite\"\nmax_records = 50\n")
        #expect(
            sqlite.sink.name == "sqlite" && sqlite.resolvedArchivePath == "/home/op/.local/state/ingestd/archive.sqlite"
        )
        #expect(sqlite.upload?.maxRecords == 50)
        let clickhouse = try Self.parse(
            "[upload]\nsink = \"clickhouse\"\nurl = \"http://127.0.0.1:8123/\"\ndatabase = \"telemetry\"\ndeduplication_token = false\n"
        )
        #expect(clickhouse.sink.name == "clickhouse" && clickhouse.resolvedArchivePath == nil)
        #expect(clickhouse.uploadSummary.hasPrefix("ClickHouse http://127.0.0.1:8123/ into telemetry.<record type>"))
        #expect(clickhouse.uploadSummary.hasSuffix("deduplication token off"))
        let influx = try Self.parse(
            "[upload]\nsink = \"influxdb\"\nurl = \"http://127.0.0.1:8086/write\"\ntags = [\"deviceId\"]\ntimestamp = \"ts\"\n"
        )
        #expect(influx.uploadSummary.contains("tags [deviceId], time from ts"))
        let postgres = try Self.parse(
            "[upload]\nsink = \"postgresql\"\nurl = \"postgresql://ingest@127.0.0.1/telemetry\"\ntable = \"w\"\n"
        )
        #expect(postgres.sink.name == "postgresql" && postgres.uploadSummary.contains("into w, 4000 records per batch"))
        let ingest = try Self.parse("[upload]\nurl = \"https://backend.example/ingest/v1/batches\"\ngzip = true\n")
        #expect(ingest.sink.name == "ingest" && ingest.upload?.http.gzip == true)
        #expect(ingest.uploadSummary.hasSuffix("gzip true, token none"))
        #expect(
            Set(SinkSettings.names) == [
                "ingest", "sqlite", "clickhouse", "postgresql", "influxdb", "mqtt", "jetstream",
            ]
        )
    }

    @Test func anotherSinksKeyOrAnHTTPKeyUnderALocalSinkIsAProblem() {
        #expect(
            Self.problems("[upload]\nsink = \"sqlite\"\npath = \"a.sqlite\"\ndatabase = \"x\"\ngzip = true\n") == [
                "line 8: upload.database: is for sink = \"clickhouse\"; this [upload] has sink = \"sqlite\"",
                "line 9: upload.gzip: only applies to HTTP sinks; sink = \"sqlite\" writes to upload.path",
            ]
        )
        #expect(
            Self.problems("[upload]\nurl = \"http://h/\"\ntable = \"t\"\n") == [
                "line 7: upload.table: is for sink = \"clickhouse\" or \"postgresql\"; this [upload] has sink = \"ingest\""
            ]
        )
        // postgresql reads url and the timeouts, not the rest of the HTTP keys.
        #expect(
            Self.problems(
                "[upload]\nsink = \"postgresql\"\nurl = \"postgresql://h/db\"\ntimeout_ms = 5\nproxy = \"p\"\n"
            ) == [
                "line 9: upload.proxy: only applies to HTTP sinks; sink = \"postgresql\" connects with libpq (TLS: sslmode, sslrootcert, sslcert, sslkey in upload.url)"
            ]
        )
    }

    @Test func anUnknownSinkListsTheKnownOnes() {
        #expect(
            Self.problems("[upload]\nsink = \"kafka\"\n") == [
                "line 6: upload.sink: must be one of ingest, sqlite, clickhouse, postgresql, influxdb, mqtt, jetstream, got \"kafka\""
            ]
        )
    }

    @Test func anOwnerFieldMustBeAStringFieldOfEveryTypeAndOneForAllHTTPInputs() throws {
        let http = "[[inputs]]\nkind = \"http\"\nlisten = \"127.0.0.1:0\"\n"
        #expect(
            Self.problems(http + "owner_field = \"deviceId\"\n") == []
        )
        #expect(
            try Self.parse(http + "owner_field = \"deviceId\"\n").inputs.first?.http?.ownerField == "deviceId"
        )
        #expect(
            Self.problems(http + "owner_field = \"temperature\"\n" + http.replacingOccurrences(of: ":0", with: ":1"))
                == [
                    "line 8: inputs[0].owner_field: names \"temperature\", which [types.WeatherSensor] does not declare as a string field: add temperature = \"string?\" to it (the sender's account id is written there)"
                ]
        )
        #expect(
            Self.problems(
                http + "owner_field = \"deviceId\"\n" + http.replacingOccurrences(of: ":0", with: ":1")
                    + "owner_field = \"site\"\n"
            ).contains { $0.contains("inputs[1].owner_field: differs from input 'http:127.0.0.1:0's") }
        )
        #expect(
            Self.problems("[[inputs]]\nkind = \"stdin\"\nowner_field = \"deviceId\"\n") == [
                "line 7: inputs[0].owner_field: applies only to an http input (kind = \"http\")"
            ]
        )
    }

    @Test func anHTTPInputsWorkerThreadsAre32ByDefaultAndBounded() throws {
        let http = "[[inputs]]\nkind = \"http\"\nlisten = \"127.0.0.1:0\"\n"
        #expect(try Self.parse(http).inputs.first?.http?.workerThreads == 32)
        #expect(try Self.parse(http + "worker_threads = 4\n").inputs.first?.http?.workerThreads == 4)
        #expect(
            Self.problems(http + "worker_threads = 0\n") == [
                "line 8: inputs[0].worker_threads: must be at least 1, got 0"
            ]
        )
        #expect(
            Self.problems(http + "worker_threads = 5000\n") == [
                "line 8: inputs[0].worker_threads: must be at most 1024, got 5000"
            ]
        )
    }

    @Test func tlsNeedsCertificateAndKeyAndMutualTLSNeedsTLS() throws {
        let http = "[[inputs]]\nkind = \"http\"\nlisten = \"127.0.0.1:0\"\n"
        let both = try Self.parse(
            http + "tls_certificate = \"/c.pem\"\ntls_key = \"/k.pem\"\ntls_client_ca = \"/ca.pem\"\n"
        )
        #expect(both.inputs.first?.http?.tlsCertificateFile == "/c.pem")
        #expect(both.inputs.first?.http?.tlsKeyFile == "/k.pem")
        #expect(both.inputs.first?.http?.tlsClientCAFile == "/ca.pem")
        #expect(
            Self.problems(http + "tls_certificate = \"/c.pem\"\n") == [
                "line 8: inputs[0].tls_key: TLS needs both tls_certificate and tls_key (PEM files)"
            ]
        )
        #expect(
            Self.problems(http + "tls_client_ca = \"/ca.pem\"\n") == [
                "line 8: inputs[0].tls_client_ca: needs tls_certificate and tls_key: mutual TLS is TLS first"
            ]
        )
    }

    @Test func theInfluxDBSinksKeysMustNameDeclaredFields() {
        #expect(
            Self.problems(
                "[upload]\nsink = \"influxdb\"\nurl = \"http://h/write?precision=s\"\ntags = [\"site\"]\ntimestamp = \"deviceId\"\n"
            ) == [
                "line 7: upload.url: must not set precision=: the influxdb sink sends nanoseconds and adds precision=ns itself",
                "line 8: upload.tags: names 'site', which no record type under [types] declares",
                "line 9: upload.timestamp: must name a field of type timestamp under [types], got 'deviceId'",
            ]
        )
    }

    @Test func problemsOfEverySectionAreListedInTheOrderOfTheFile() {
        let problems = Self.problems(
            """
            [agent]
            log_level = "loud"
            colour = "red"
            [queue]
            max_bytes = 10
            overflow_policy = "spill"
            [[inputs]]
            kind = "serial"
            [upload]
            url = "ftp://h/"
            """
        )
        #expect(
            problems == [
                "line 6: agent.log_level: must be one of trace, debug, info, notice, warning, error, critical, got \"loud\"",
                "line 7: agent.colour: unknown key: expected one of log_level, log_target, rejects_file, state_directory, stats_interval_seconds, status_interval_ms",
                "line 9: queue.max_bytes: must be at least 1024, got 10",
                "line 10: queue.overflow_policy: must be one of block, drop_newest, drop_oldest, got \"spill\"",
                "line 11: inputs[0].device: a serial input needs its device, e.g. \"/dev/ttyUSB0\"",
                "line 14: upload.url: must start with http:// or https://, got \"ftp://h/\"",
            ]
        )
    }

    @Test func aLikelyMisspellingGetsADidYouMean() {
        #expect(
            Self.problems("[queue]\noverflow-policy = \"drop_oldest\"\ndurability = \"crashsafe\"\n") == [
                "line 6: queue.overflow-policy: unknown key (did you mean \"overflow_policy\"?): expected one of commit_interval_ms, commit_max_records, compression, durability, encryption_key_file, max_bytes, max_records, overflow_policy, path, schema_version",
                "line 7: queue.durability: must be power_loss_safe or crash_safe, got \"crashsafe\" (did you mean \"crash_safe\"?)",
            ]
        )
        #expect(
            Self.problems("[upload]\nsink = \"clickhous\"\n") == [
                "line 6: upload.sink: must be one of ingest, sqlite, clickhouse, postgresql, influxdb, mqtt, jetstream, got \"clickhous\" (did you mean \"clickhouse\"?)"
            ]
        )
    }

    @Test func pathForPathsIsOneClearProblem() {
        #expect(
            Self.problems("[[inputs]]\nkind = \"file\"\npath = \"/var/log/a.ndjson\"\n") == [
                "line 7: inputs[0].path: not a key: a file input takes paths, a list of paths or globs (paths = [\"/var/log/sensors/*.ndjson\"]); a serial input takes device"
            ]
        )
    }

    @Test func durationsAreBoundedSoNoDeadlineOverflows() {
        #expect(
            Self.problems("[upload]\nurl = \"http://h/\"\nlinger_ms = 99999999999999\n") == [
                "line 7: upload.linger_ms: must be at most 31536000000 (365 days), got 99999999999999"
            ]
        )
    }

    @Test func loginNeedsTheIngestSink() {
        #expect(
            Self.problems(
                "[upload]\nsink = \"sqlite\"\npath = \"a\"\n[auth]\nprovider = \"anonymous\"\napp_id = \"x\"\nbase_url = \"http://h\"\n"
            ) == ["line 8: auth: only applies to sink = \"ingest\": a local sink needs no login"]
        )
    }
}

/// `[clock]` and `[delivery.TYPE]`: how the agent knows the clock, and what
/// each type's records carry of their acceptance time.
@Suite struct ClockConfigurationTests {
    @Test func deliveryFillsTheQueuesAcceptanceStampsAndTheSinksColumns() throws {
        let c = try ConfigurationParsingTests.parse(
            """
            [clock]
            synchronised_file = "/run/gps/locked"

            [delivery.WeatherSensor]
            accepted_at_field = "accepted_at"
            clock_field = "accepted_clock"
            hold_unsynchronised = true
            """
        )
        #expect(c.clockSource == .flagFile("/run/gps/locked"))
        #expect(
            c.queueConfiguration.acceptanceStamps["WeatherSensor"]
                == AcceptanceStamping(timeField: "accepted_at", clockField: "accepted_clock", holdUnsynchronised: true)
        )
        let delivered = try #require(c.deliveredTypes.first)
        #expect(delivered.fields.suffix(2).map(\.name) == ["accepted_at", "accepted_clock"])
        #expect(delivered.fields.suffix(2).map(\.type) == [.timestamp, .string])
        #expect(c.types[0].fields.count == 3)
        #expect(c.typeDelivery.isEmpty)
    }

    @Test func aClockTheOperatorVouchesForIsAlwaysSynchronised() throws {
        let c = try ConfigurationParsingTests.parse("[clock]\nassume_synchronised = true\n")
        #expect(c.clockSource == .always)
        #expect(try ConfigurationParsingTests.parse("").clockSource == .automatic)
        let both = ConfigurationParsingTests.problems(
            "[clock]\nsynchronised_file = \"/run/x\"\nassume_synchronised = true\n"
        )
        #expect(both.contains { $0.contains("clock.assume_synchronised") && $0.contains("keep one") })
    }

    @Test func priorityDrainOrderAndMaximumAgeGoToTheQueue() throws {
        let c = try ConfigurationParsingTests.parse(
            """
            [delivery.WeatherSensor]
            priority = 5
            drain_order = "newest_first"
            max_age_s = 86400
            share = 0.25
            """
        )
        #expect(
            c.queueConfiguration.typeDelivery["WeatherSensor"]
                == TypeDelivery(priority: 5, drainOrder: .newestFirst, maxAgeMilliseconds: 86_400_000, share: 0.25)
        )
        #expect(c.acceptanceStamps.isEmpty)
    }

    @Test func mistakesAreNamedWithTheirLine() {
        let problems = ConfigurationParsingTests.problems(
            """
            [clock]
            synchronised_file = "relative/path"

            [delivery.WeatherSensr]
            accepted_at_field = "at"

            [delivery.WeatherSensor]
            accepted_at_field = "deviceId"
            clock_field = "has\\"quote"
            prio = 3
            drain_order = "newest"
            max_age_s = 0
            share = 1.5
            """
        )
        #expect(problems.contains { $0.contains("clock.synchronised_file") && $0.contains("absolute path") })
        #expect(problems.contains { $0.contains("delivery.WeatherSensr") && $0.contains("WeatherSensor") })
        #expect(problems.contains { $0.contains("accepted_at_field") && $0.contains("already a field") })
        #expect(problems.contains { $0.contains("clock_field") && $0.contains("quotes") })
        #expect(problems.contains { $0.contains("delivery.WeatherSensor.prio:") && $0.contains("unknown key") })
        #expect(problems.contains { $0.contains("drain_order") && $0.contains("oldest_first or newest_first") })
        #expect(problems.contains { $0.contains("max_age_s") && $0.contains("at least 1") })
        #expect(problems.contains { $0.contains("share") && $0.contains("at most 1") })
    }
}

extension ClockConfigurationTests {
    /// The README's example of the section is a configuration that loads.
    @Test func theReadmesExampleLoads() throws {
        let readme = try String(
            contentsOf: repositoryRoot.appendingPathComponent("README.md"),
            encoding: .utf8
        )
        let section = try #require(readme.range(of: "### Boxes without a real-time clock"))
        let rest = readme[section.upperBound...]
        let open = try #require(rest.range(of: "```toml\n"))
        let close = try #require(rest[open.upperBound...].range(of: "```"))
        let block = String(rest[open.upperBound..<close.lowerBound])
        let c = try ConfigurationParsingTests.parse(
            "[types.Alarm]\ndeviceId = \"string\"\n\n" + block
        )
        #expect(c.typeDelivery["Alarm"]?.priority == 10)
        #expect(c.typeDelivery["WeatherSensor"]?.maxAgeMilliseconds == 604_800_000)
        #expect(c.acceptanceStamps["WeatherSensor"]?.holdUnsynchronised == true)
        #expect(c.clockSource == .flagFile("/run/gps/locked"))
    }
}
