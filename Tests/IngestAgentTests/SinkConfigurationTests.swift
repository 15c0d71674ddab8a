import EdgeIngestCore
import Testing

@testable import IngestAgent

/// `[sinks.NAME]`, routes, lag bounds and `urls` on text (docs/SINKS.md
/// "Several sinks"); the binary's side is ingestdTests' FanOutTests.
@Suite struct SinkConfigurationTests {
    typealias P = ConfigurationParsingTests

    @Test func oneUploadIsOneSinkTakingEveryTypeAndStoresNoRouting() throws {
        let c = try P.parse("[upload]\nurl = \"http://gw/ingest/v1/batches\"\n")
        #expect(c.deliveringSinks.map(\.name) == ["upload"])
        #expect(c.queueConfiguration.routing == .single)
    }

    @Test func namedSinksComeAfterUploadWithTheirOwnKeysAndRoutes() throws {
        let c = try P.parse(
            """
            [queue]
            max_bytes = 100000000
            [upload]
            url = "http://gw/ingest/v1/batches"
            [sinks.site]
            sink = "sqlite"
            path = "site.sqlite"
            types = ["WeatherSensor"]
            max_records = 50
            [sinks.backup]
            urls = ["http://a/ingest/v1/batches", "http://b/ingest/v1/batches"]
            failover_after = 5
            failback_s = 60
            max_lag_bytes = 0
            max_lag_s = 3600
            """
        )
        #expect(c.deliveringSinks.map(\.name) == ["upload", "site", "backup"])
        #expect(c.namedSinks[0].sink.name == "sqlite" && c.namedSinks[0].upload.maxRecords == 50)
        let backup = c.namedSinks[1].upload.http
        #expect(backup.url == "http://a/ingest/v1/batches" && backup.failoverURLs == ["http://b/ingest/v1/batches"])
        #expect(backup.failoverAfterFailures == 5 && backup.failbackMilliseconds == 60_000)
        let routing = c.queueConfiguration.routing
        #expect(routing.sinks.map(\.types) == [nil, ["WeatherSensor"], nil])
        // Half of queue.max_bytes by default; 0 is no bound.
        #expect(routing.sinks.map(\.maxLagBytes) == [50_000_000, 50_000_000, nil])
        #expect(routing.sinks[2].maxLagMilliseconds == 3_600_000)
        #expect(c.uploadSummary.hasPrefix("3 sinks, each at its own cursor"))
    }

    @Test func aNamedSinksProblemsNameItsOwnSection() {
        let problems = P.problems(
            """
            [upload]
            url = "http://gw/ingest/v1/batches"
            [sinks.site]
            sink = "sqlite"
            gzip = true
            types = ["Nope"]
            """
        )
        #expect(
            problems.contains { $0.contains("sinks.site.gzip") && $0.contains("only applies to HTTP sinks") },
            "\(problems)"
        )
        #expect(problems.contains { $0.contains("sinks.site.types") && $0.contains("'Nope'") }, "\(problems)")
        #expect(!problems.contains { $0.contains("upload.gzip") }, "\(problems)")
    }

    @Test func aTypeNoSinkTakesAndTheReservedNameAreProblems() {
        let unrouted = P.problems(
            """
            [upload]
            url = "http://gw/ingest/v1/batches"
            types = ["Other"]
            [types.Other]
            level = "int"
            [sinks.site]
            sink = "sqlite"
            path = "site.sqlite"
            types = ["Other"]
            """
        )
        #expect(unrouted.contains { $0.contains("type 'WeatherSensor' is routed to no sink") }, "\(unrouted)")
        let reserved = P.problems("[sinks.upload]\nsink = \"sqlite\"\npath = \"a.sqlite\"\n")
        #expect(reserved.contains { $0.contains("'upload' is the name of [upload] itself") }, "\(reserved)")
        let both = P.problems("[upload]\nurl = \"http://a/\"\nurls = [\"http://b/\"]\n")
        #expect(both.contains { $0.contains("upload.urls") && $0.contains("keep one") }, "\(both)")
        let notIngest = P.problems("[upload]\nsink = \"clickhouse\"\nurl = \"http://ch:8123/\"\nfailover_after = 2\n")
        #expect(
            notIngest.contains { $0.contains("upload.failover_after") && $0.contains("sink = \"ingest\"") },
            "\(notIngest)"
        )
    }
}
