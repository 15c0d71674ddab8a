import Foundation
import TestSupport
import Testing

@testable import EdgeIngestCore

/// The postgresql sink against a real PostgreSQL server started by each
/// test (``PostgresServer``), read back with psql.
@Suite struct PostgresSinkTests {
    static func sink(
        _ server: PostgresServer,
        types: [RecordType]? = nil,
        configure: (inout PostgresSettings) -> Void = { _ in }
    ) throws
        -> PostgresSink
    {
        var settings = PostgresSettings(url: server.url)
        settings.password = server.password
        configure(&settings)
        return PostgresSink(settings: settings, types: try types ?? [declaredWeatherSensor()])
    }

    @Test func recordsLandInATypedTableOncePerIdThoughBatchesComeAgain() throws {
        let server = try PostgresServer()
        let sink = try Self.sink(server)
        let records = try weatherRecords(10)
        #expect(sink.deliver(SQLiteArchiveSinkTests.batch(Array(records[0..<6]))) == .stored(rejected: []))
        // The same batch again (a lost answer), then one cut differently (a restart).
        #expect(sink.deliver(SQLiteArchiveSinkTests.batch(Array(records[0..<6]))) == .stored(rejected: []))
        #expect(sink.deliver(SQLiteArchiveSinkTests.batch(Array(records[3..<10]))) == .stored(rejected: []))
        #expect(sink.storedCount == 10)
        #expect(sink.duplicateCount == 9)
        #expect(try server.psql("SELECT count(*), count(DISTINCT _id) FROM \"WeatherSensor\"") == "10|10")
        #expect(
            try server.psql(
                "SELECT \"deviceId\", \"temperatureInFahrenheit\", \"windSpeedInMph\" FROM \"WeatherSensor\" WHERE _id = '\(records[7].id.hexString)'"
            ) == "WX1278UIT|66.7|7"
        )
        let columns = try server.psql(
            "SELECT column_name || ':' || data_type FROM information_schema.columns WHERE table_name = 'WeatherSensor' ORDER BY ordinal_position"
        )
        #expect(
            columns.split(separator: "\n") == [
                "_id:text", "deviceId:text", "temperatureInFahrenheit:double precision",
                "barometricPressureInHg:double precision", "windSpeedInMph:bigint",
            ]
        )
        #expect(
            try server.psql("SELECT indexdef FROM pg_indexes WHERE tablename = 'WeatherSensor'").contains(
                "UNIQUE INDEX"
            )
        )
    }

    /// A gateway's owner field: the table is made keyed on (owner, `_id`),
    /// two accounts' records under one `_id` are both kept, a re-send once.
    @Test func anOwnerFieldKeysTheTableWithTheID() throws {
        let server = try PostgresServer()
        let type = try RecordType(
            name: "WeatherSensor",
            fields: try declaredWeatherSensor().fields + [.init(name: "owner_id", type: .string, isRequired: false)]
        )
        var settings = PostgresSettings(url: server.url)
        settings.password = server.password
        let sink = PostgresSink(settings: settings, types: [type], ownerField: "owner_id")
        let id = try weatherRecords(1)[0].id
        let batch = try [("key-a", "A"), ("key-b", "B"), (nil, "N")].map { owner, device in
            var values: [String: Any] = [
                "_id": id, "deviceId": device, "temperatureInFahrenheit": 1.5, "barometricPressureInHg": 2,
                "windSpeedInMph": 3,
            ]
            if let owner { values["owner_id"] = owner }
            return try type.validate(anyValues: values)
        }
        #expect(sink.deliver(SQLiteArchiveSinkTests.batch(batch)) == .stored(rejected: []))
        #expect(sink.deliver(SQLiteArchiveSinkTests.batch(batch)) == .stored(rejected: []))
        #expect(sink.storedCount == 3 && sink.duplicateCount == 3)
        #expect(
            try server.psql(
                "SELECT string_agg(owner_id || '=' || \"deviceId\", ',' ORDER BY owner_id) FROM \"WeatherSensor\""
            ) == "=N,key-a=A,key-b=B"
        )
        #expect(
            try server.psql("SELECT indexdef FROM pg_indexes WHERE tablename = 'WeatherSensor'").contains(
                "(owner_id, _id)"
            )
        )
    }

    @Test func timestampsBooleansAndAFieldAddedLaterGetTheirOwnColumnTypes() throws {
        let server = try PostgresServer()
        #expect(
            try Self.sink(server).deliver(SQLiteArchiveSinkTests.batch(try weatherRecords(2))) == .stored(rejected: [])
        )
        let wider = try RecordType(
            name: "WeatherSensor",
            fields: try declaredWeatherSensor().fields + [
                .init(name: "takenAt", type: .timestamp, isRequired: false),
                .init(name: "calibrated", type: .bool, isRequired: false),
            ]
        )
        let record = try wider.validate([
            "deviceId": "A", "temperatureInFahrenheit": 1.5, "barometricPressureInHg": 2, "windSpeedInMph": 3,
            "takenAt": "2026-11-21T10:00:00.250+01:00",
            "calibrated": true,
        ])
        #expect(
            try Self.sink(server, types: [wider]).deliver(SQLiteArchiveSinkTests.batch([record]))
                == .stored(rejected: [])
        )
        #expect(
            try server.psql(
                "SELECT count(*), count(\"takenAt\"), max(\"takenAt\") AT TIME ZONE 'UTC', bool_and(calibrated) FROM \"WeatherSensor\""
            ) == "3|1|2026-11-21 09:00:00.25|t"
        )
        #expect(
            try server.psql("SELECT data_type FROM information_schema.columns WHERE column_name = 'takenAt'")
                == "timestamp with time zone"
        )
    }

    @Test func aTableMadeByTheDBAWithAConstraintRefusesOnlyThePoisonRecordAndNamesNoValue() throws {
        let server = try PostgresServer()
        try server.psql(
            """
            CREATE TABLE weather (_id text PRIMARY KEY, "deviceId" text NOT NULL, "temperatureInFahrenheit" double precision,
              "barometricPressureInHg" double precision, "windSpeedInMph" bigint CHECK ("windSpeedInMph" <> 7));
            CREATE ROLE writer LOGIN PASSWORD 'writer-pw'; GRANT SELECT, INSERT ON weather TO writer;
            """
        )
        // The agent's role may only insert: any DDL it sent would be refused (42501) and hold.
        let sink = try Self.sink(server) {
            $0.url = "postgresql://writer@127.0.0.1:\(server.port)/telemetry"
            $0.password = "writer-pw"
            $0.table = "weather"
        }
        let records = try weatherRecords(10)
        guard case .badBatch(let reason) = sink.deliver(SQLiteArchiveSinkTests.batch(records)) else {
            Issue.record("expected a bad batch")
            return
        }
        #expect(reason == "PostgreSQL error 23514", "the server's message quotes the row: \(reason)")
        // The uploader bisects; the halves without record 7 go through.
        #expect(sink.deliver(SQLiteArchiveSinkTests.batch(Array(records[0..<5]))) == .stored(rejected: []))
        #expect(sink.deliver(SQLiteArchiveSinkTests.batch(Array(records[8..<10]))) == .stored(rejected: []))
        #expect(try server.psql("SELECT count(*) FROM weather") == "7")
    }

    @Test func aWrongPasswordHoldsAndNeitherPasswordIsEverPrinted() throws {
        let server = try PostgresServer()
        let sink = try Self.sink(server) { $0.password = "not-the-pw-8841" }
        guard case .hold(let reason) = sink.deliver(SQLiteArchiveSinkTests.batch(try weatherRecords(1))) else {
            Issue.record("expected a hold")
            return
        }
        #expect(reason.contains("password authentication failed"), "\(reason)")
        #expect(reason.contains("upload.password_file"), "\(reason)")
        #expect(!reason.contains("not-the-pw-8841"))
        let inline = try Self.sink(server) {
            $0.url = "postgresql://ingest:\(server.password)@127.0.0.1:\(server.port)/telemetry"
            $0.password = nil
        }
        #expect(inline.deliver(SQLiteArchiveSinkTests.batch(try weatherRecords(1))) == .stored(rejected: []))
        #expect(!inline.description.contains(server.password))
        #expect(inline.description.contains("ingest:***@127.0.0.1"))
        // libpq quotes back what it cannot parse — here the password itself.
        for (url, secret) in [
            ("postgresql://ingest:pa%zz9931@127.0.0.1:\(server.port)/telemetry", "pa%zz9931"),
            ("host=127.0.0.1 port=\(server.port) dbname=telemetry password=my w0rd7731", "w0rd7731"),
        ] {
            let unparsable = try Self.sink(server) {
                $0.url = url
                $0.password = nil
            }
            guard case .hold(let reason) = unparsable.deliver(SQLiteArchiveSinkTests.batch(try weatherRecords(1)))
            else {
                Issue.record("expected a hold for an unparsable URL")
                continue
            }
            #expect(!reason.contains(secret), "\(reason)")
            #expect(reason.contains("fix upload.url"), "\(reason)")
        }
    }

    @Test func aTableDroppedBehindTheSinksBackIsMadeAgain() throws {
        let server = try PostgresServer()
        let sink = try Self.sink(server)
        #expect(sink.deliver(SQLiteArchiveSinkTests.batch(try weatherRecords(2))) == .stored(rejected: []))
        try server.psql("DROP TABLE \"WeatherSensor\"")
        // The prepared insert fails once (42P01, a hold); the next attempt looks at the table again.
        guard case .hold(let reason) = sink.deliver(SQLiteArchiveSinkTests.batch(try weatherRecords(2, start: 2)))
        else {
            Issue.record("expected a hold")
            return
        }
        #expect(reason.contains("42P01"), "\(reason)")
        #expect(sink.deliver(SQLiteArchiveSinkTests.batch(try weatherRecords(2, start: 2))) == .stored(rejected: []))
        #expect(try server.psql("SELECT count(*) FROM \"WeatherSensor\"") == "2")
    }

    @Test func anInsertWithoutRightsHoldsAndSaysSo() throws {
        let server = try PostgresServer()
        try server.psql(
            "CREATE ROLE reader LOGIN PASSWORD 'reader-pw'; CREATE TABLE \"WeatherSensor\" (_id text PRIMARY KEY, \"deviceId\" text, \"temperatureInFahrenheit\" double precision, \"barometricPressureInHg\" double precision, \"windSpeedInMph\" bigint)"
        )
        let sink = try Self.sink(server) {
            $0.url = "postgresql://reader@127.0.0.1:\(server.port)/telemetry"
            $0.password = "reader-pw"
        }
        guard case .hold(let reason) = sink.deliver(SQLiteArchiveSinkTests.batch(try weatherRecords(1))) else {
            Issue.record("expected a hold")
            return
        }
        #expect(reason.contains("42501") && reason.contains("permission denied"), "\(reason)")
    }

    @Test func aServerThatIsDownOrRestartedIsRetriedAndUsedWhenBack() throws {
        let server = try PostgresServer()
        let sink = try Self.sink(server)
        #expect(sink.deliver(SQLiteArchiveSinkTests.batch(try weatherRecords(3))) == .stored(rejected: []))
        try server.stop()
        guard case .retry(let reason, _) = sink.deliver(SQLiteArchiveSinkTests.batch(try weatherRecords(3, start: 3)))
        else {
            Issue.record("expected a retry")
            return
        }
        #expect(reason.contains("connection") || reason.contains("connect"), "\(reason)")
        try server.start()
        // The old connection died with the server: at most one more retry.
        var outcome = sink.deliver(SQLiteArchiveSinkTests.batch(try weatherRecords(3, start: 3)))
        if !outcome.isStored { outcome = sink.deliver(SQLiteArchiveSinkTests.batch(try weatherRecords(3, start: 3))) }
        #expect(outcome == .stored(rejected: []))
        #expect(try server.psql("SELECT count(*) FROM \"WeatherSensor\"") == "6")
    }

    @Test func aLockedTableCostsTimeoutMillisecondsAndTheLateInsertIsNotDoubled() throws {
        let server = try PostgresServer()
        let sink = try Self.sink(server) { $0.timeoutMilliseconds = 700 }
        let records = try weatherRecords(4)
        #expect(sink.deliver(SQLiteArchiveSinkTests.batch(Array(records[0..<1]))) == .stored(rejected: []))
        // Another session holds the table for 3 s.
        let locker = Process()
        locker.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        locker.arguments =
            (getuid() == 0 ? ["runuser", "-u", "postgres", "--"] : []) + [
                "psql", "-h", server.directory.path, "-p", String(server.port), "-U", "ingest", "-d", "telemetry",
                "-c", "BEGIN; LOCK TABLE \"WeatherSensor\" IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3); COMMIT;",
            ]
        locker.standardOutput = FileHandle.nullDevice
        try locker.run()
        defer { locker.waitUntilExit() }
        #expect(
            try eventually {
                try server.psql(
                    "SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND relation = '\"WeatherSensor\"'::regclass"
                ) == "1"
            }
        )
        let started = Date()
        guard case .retry(let reason, _) = sink.deliver(SQLiteArchiveSinkTests.batch(Array(records[1..<4]))) else {
            Issue.record("expected a retry")
            return
        }
        #expect(reason.contains("did not answer within 700 ms"), "\(reason)")
        #expect(Date().timeIntervalSince(started) < 2.5)
        locker.waitUntilExit()
        // The abandoned insert may still commit once the lock is gone; the retry must not double it.
        #expect(eventually { sink.deliver(SQLiteArchiveSinkTests.batch(Array(records[1..<4]))).isStored })
        #expect(try server.psql("SELECT count(*), count(DISTINCT _id) FROM \"WeatherSensor\"") == "4|4")
    }

    @Test func theWatchdogAllowsEveryStatementItsOwnTimeout() throws {
        var settings = PostgresSettings(url: "postgresql://db/t")
        settings.connectTimeoutMilliseconds = 2_000
        settings.timeoutMilliseconds = 60_000
        // WeatherSensor has 4 fields: the columns query, 4 added columns (on a
        // table holding only _id; a CREATE instead when there is no table), the insert.
        #expect(
            PostgresSink(settings: settings, types: [try declaredWeatherSensor()]).deliveryTimeLimitMilliseconds
                == 2_000 + 6 * 60_000
        )
        let note = try RecordType(name: "Note", fields: [.init(name: "text", type: .string)])
        // One field: the columns query, the CREATE (or one ALTER), the insert.
        #expect(PostgresSink(settings: settings, types: [note]).deliveryTimeLimitMilliseconds == 2_000 + 3 * 60_000)
    }

    @Test func withoutLibpqTheSinkHoldsAndSaysWhatToInstall() {
        guard case .failure(let error) = LibPQ.load(names: ["libpq-that-is-not-there.so.5"]) else {
            Issue.record("expected a failure")
            return
        }
        #expect(PostgresSink.classify(error) == .hold(reason: error.message))
        #expect(error.message.contains("apt-get install libpq5"))
    }

    @Test(arguments: [
        ("22P02", UploadOutcome.badBatch(reason: "PostgreSQL error 22P02")),
        ("23502", .badBatch(reason: "PostgreSQL error 23502")),
        ("23514", .badBatch(reason: "PostgreSQL error 23514")),
        ("54000", .badBatch(reason: "PostgreSQL error 54000: m")),
        ("42P01", .hold(reason: "PostgreSQL error 42P01: m: fix the table, its rights or [upload]")),
        ("42501", .hold(reason: "PostgreSQL error 42501: m: fix the table, its rights or [upload]")),
        ("28P01", .hold(reason: "PostgreSQL error 28P01: m: fix the table, its rights or [upload]")),
        ("3D000", .hold(reason: "PostgreSQL error 3D000: m: fix the table, its rights or [upload]")),
        ("25006", .hold(reason: "PostgreSQL error 25006: m: fix the table, its rights or [upload]")),
        ("53100", .retry(reason: "PostgreSQL error 53100: m", retryAfterSeconds: nil)),
        ("57P01", .retry(reason: "PostgreSQL error 57P01: m", retryAfterSeconds: nil)),
        ("40P01", .retry(reason: "PostgreSQL error 40P01: m", retryAfterSeconds: nil)),
        ("08006", .retry(reason: "PostgreSQL error 08006: m", retryAfterSeconds: nil)),
        ("XX000", .retry(reason: "PostgreSQL error XX000: m", retryAfterSeconds: nil)),
    ])
    func serverErrorsAreClassifiedBySQLState(state: String, expected: UploadOutcome) {
        #expect(PostgresSink.classify(.server(sqlState: state, primaryMessage: "m")) == expected)
    }

    @Test func connectionFailuresHoldOnlyWhenNoRetryCanHelp() {
        let refused = PostgresError(
            kind: .connection,
            message: "cannot connect: connection to server at \"127.0.0.1\", port 9 failed: Connection refused"
        )
        #expect(PostgresSink.classify(refused) == .retry(reason: refused.message, retryAfterSeconds: nil))
        for message in [
            "FATAL: password authentication failed for user \"ingest\"", "FATAL: database \"telemetry\" does not exist",
            "FATAL: no pg_hba.conf entry for host \"10.0.0.2\"",
        ] {
            guard case .hold = PostgresSink.classify(PostgresError(kind: .connection, message: message)) else {
                Issue.record("expected a hold for \(message)")
                continue
            }
        }
    }

    @Test(arguments: [
        ("postgresql://ingest:pw@db:5432/t", "postgresql://ingest:***@db:5432/t"),
        (
            "postgresql://ingest@db/t?password=pw&sslmode=require",
            "postgresql://ingest@db/t?password=***&sslmode=require"
        ),
        ("host=db password='p w\\'x' dbname=t", "host=db password=*** dbname=t"),
        ("host=db password=pw dbname=t", "host=db password=*** dbname=t"),
        ("host=db password=my w0rd dbname=t", "host=db password=*** dbname=t"),
        ("host=db password=pw\\ x dbname = t", "host=db password=*** dbname = t"),
        ("host=db password=my w0rd", "host=db password=***"),
        ("postgresql://a@db/t?user_password=x", "postgresql://a@db/t?user_password=x"),
        ("host=db password = 'p w' dbname=t", "host=db password = *** dbname=t"),
        ("host=db sslpassword=kp password=pw", "host=db sslpassword=*** password=***"),
        ("postgresql://u@db/t?sslpassword=kp&sslmode=require", "postgresql://u@db/t?sslpassword=***&sslmode=require"),
        ("host=db\tpassword=pw\tdbname=t", "host=db\tpassword=***\tdbname=t"),
        ("pgsql://ingest:averyveryverylongpassword@db/t", "pgsql://ingest:***@db/t"),
        ("http://influx:8086/write?db=t&u=me&p=s3cret", "http://influx:8086/write?db=t&u=me&p=***"),
        ("http://ch:8123/?user=u&password=pw&query=x", "http://ch:8123/?user=u&password=***&query=x"),
        ("http://ch:8123/?dp=1&pp=2", "http://ch:8123/?dp=1&pp=2"),
    ])
    func passwordsAreRedactedFromTheURL(url: String, shown: String) {
        #expect(redactedURL(url) == shown)
    }

    @Test func theBatchIsSentAsOneJSONArray() {
        #expect(
            PostgresSink.jsonArray(Array("{\"a\":1}\n{\"b\":2}\n".utf8)[...]) == Array("[{\"a\":1},{\"b\":2}]\0".utf8)
        )
        #expect(PostgresSink.jsonArray(Array("{\"a\":\"x\\ny\"}\n".utf8)[...]) == Array("[{\"a\":\"x\\ny\"}]\0".utf8))
    }
}
