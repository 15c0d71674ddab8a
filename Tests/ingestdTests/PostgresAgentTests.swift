import Foundation
import TestSupport
import Testing

/// `upload.sink = "postgresql"` through the built binary, against a real
/// PostgreSQL server started by the test. The sink's own cases (re-sent
/// batches, timeouts, rights, classification) are EdgeIngestTests'
/// PostgresSinkTests.
@Suite struct PostgresAgentTests {
    /// The password in `password_file`, or (`inline`) in the URL, where
    /// every log line and status must show it as `***`.
    static func fixture(_ server: PostgresServer, inline: Bool = false, _ extra: String = "") throws -> AgentFixture {
        let url =
            inline ? server.url.replacingOccurrences(of: "ingest@", with: "ingest:\(server.password)@") : server.url
        return try AgentFixture(
            """

            [upload]
            sink = "postgresql"
            url = "\(url)"
            \(inline ? "" : "password_file = \"\(server.passwordFile)\"")
            linger_ms = 20
            retry_base_ms = 20
            retry_cap_ms = 200
            \(extra)
            """
        )
    }

    @Test func pipedReadingsLandOnceAndAPoisonRecordGoesToTheDeadLetters() throws {
        let server = try PostgresServer()
        try server.psql(
            """
            CREATE TABLE weather (_id text PRIMARY KEY, "deviceId" text NOT NULL CHECK ("deviceId" <> 'POISON'), "temperatureInFahrenheit" double precision,
              "barometricPressureInHg" double precision, "windSpeedInMph" bigint)
            """
        )
        let fixture = try Self.fixture(server, inline: true, "table = \"weather\"\nmax_records = 500")
        let readings = (0..<2500).map { reading($0 % 40, device: $0 == 1234 ? "POISON" : "A\($0)") + "\n" }.joined()
        // stdin stays open while the uploader bisects (a drain on stop does not).
        let agent = try RunningAgent(
            arguments: ["run", "--config", fixture.configPath],
            environment: IngestdBinary.environment
        )
        agent.write(readings)
        let reached = eventually(timeout: 30) {
            ((try? fixture.status()) ?? [:])["dead_letter_records"] as? Int == 1
                && (try? fixture.status())?["queued_records"] as? Int == 0
        }
        let result = (status: agent.terminate(), stderr: agent.stderr)
        #expect(reached, "\(result.stderr.suffix(2000))")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stderr.contains("PostgreSQL postgresql://ingest:***@127.0.0.1:\(server.port)/telemetry"),
            "\(result.stderr.suffix(2000))"
        )
        #expect(result.stderr.contains("PostgreSQL error 23514"), "\(result.stderr.suffix(2000))")
        #expect(!result.stderr.contains(server.password))
        #expect(!(try fixture.run(["status", "--json"]).stdout.contains(server.password)))
        #expect(
            try server.psql("SELECT count(*), count(DISTINCT _id), count(DISTINCT \"deviceId\") FROM weather")
                == "2499|2499|2499"
        )
        let status = try fixture.status()
        #expect(status["queued_records"] as? Int == 0)
        #expect(status["uploaded_total"] as? Int == 2499)
        #expect(status["dead_letter_records"] as? Int == 1)
    }

    @Test func checkConfigShowsTheDatabaseWithoutThePassword() throws {
        let fixture = try AgentFixture(
            "\n[upload]\nsink = \"postgresql\"\nurl = \"postgresql://ingest:inline-pw@db:5432/telemetry\"\nschema = \"edge\"\n"
        )
        let result = try fixture.run(["check-config"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains(
                "  upload: PostgreSQL postgresql://ingest:***@db:5432/telemetry into edge.<record type>, 4000 records per batch, password in url"
            ),
            "\(result.stdout)"
        )
        #expect(!result.stdout.contains("inline-pw"))
    }

    @Test func thePasswordComesFromTheSystemdCredentialWhenNoFileIsNamed() throws {
        let dir = try TemporaryDirectory()
        let credentials = dir.file("credentials")
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true)
        let fixture = try AgentFixture(
            "\n[upload]\nsink = \"postgresql\"\nurl = \"postgresql://ingest@db/telemetry\"\n"
        )
        var environment = IngestdBinary.environment
        environment["CREDENTIALS_DIRECTORY"] = credentials
        // No credential file: libpq's own sources, not an error.
        let without = try fixture.run(["check-config"], environment: environment)
        #expect(without.status == 0, "\(without.stderr)")
        #expect(without.stdout.contains("password from libpq's defaults"), "\(without.stdout)")
        try "cred-pw-3391\n".write(toFile: credentials + "/postgres-password", atomically: true, encoding: .utf8)
        let with = try fixture.run(["check-config"], environment: environment)
        #expect(with.status == 0, "\(with.stderr)")
        #expect(with.stdout.contains("password set"), "\(with.stdout)")
        #expect(!with.stdout.contains("cred-pw-3391"))
        // The unit's empty SetCredential= default (a newline) means no password, as for the upload token.
        try "\n".write(toFile: credentials + "/postgres-password", atomically: true, encoding: .utf8)
        let empty = try fixture.run(["check-config"], environment: environment)
        #expect(empty.status == 0, "\(empty.stderr)")
        #expect(empty.stdout.contains("password from libpq's defaults"), "\(empty.stdout)")
        // A secret wrapped over two lines is refused, not joined.
        try "first-half\nsecond-half\n".write(
            toFile: credentials + "/postgres-password",
            atomically: true,
            encoding: .utf8
        )
        let wrapped = try fixture.run(["check-config"], environment: environment)
        #expect(wrapped.status == 78)
        #expect(wrapped.stderr.contains("holds more than one line: a secret is one line"), "\(wrapped.stderr)")
        #expect(!wrapped.stderr.contains("first-half"))
    }

    @Test func checkConfigNamesWhatThePostgresqlSinkNeedsAndWhatItIgnores() throws {
        let cases: [(upload: String, expected: String)] = [
            ("sink = \"postgresql\"", "upload.url: is required with sink = \"postgresql\""),
            ("sink = \"postgresql\"\nurl = \"http://db/\"", "upload.url: must be a libpq URL"),
            (
                "sink = \"postgresql\"\nurl = \"postgresql://db/t\"\ngzip = true",
                "upload.gzip: only applies to HTTP sinks; sink = \"postgresql\" connects with libpq"
            ),
            (
                "sink = \"postgresql\"\nurl = \"postgresql://db/t\"\npassword_file = \"/nonexistent/pw\"",
                "upload.password_file: '/nonexistent/pw' cannot be read"
            ),
            (
                "sink = \"postgresql\"\nurl = \"postgresql://db/t\"\ntable = \"a b\"",
                "upload.table: must be a plain name"
            ),
            (
                "sink = \"sqlite\"\npath = \"/tmp/a.sqlite\"\nschema = \"s\"",
                "upload.schema: is for sink = \"postgresql\"; this [upload] has sink = \"sqlite\""
            ),
            (
                "sink = \"sqlite\"\npath = \"/tmp/a.sqlite\"\ntable = \"s\"",
                "upload.table: is for sink = \"clickhouse\" or \"postgresql\""
            ),
        ]
        for (upload, expected) in cases {
            let fixture = try AgentFixture("\n[upload]\n" + upload + "\n")
            let result = try fixture.run(["check-config"])
            #expect(result.status == 78, "\(upload)")
            #expect(result.stderr.contains(expected), "\(upload) → \(result.stderr)")
        }
    }
}
