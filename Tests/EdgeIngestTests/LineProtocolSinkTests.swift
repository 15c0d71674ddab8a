import EdgeIngest
import Foundation
import TestSupport
import Testing

@testable import EdgeIngestCore

/// The influxdb sink's request bodies (line protocol) and its reading of
/// InfluxDB's and VictoriaMetrics' answers, recorded from real servers.
struct LineProtocolSinkTests {
    static func type(_ extra: [RecordType.Field] = []) throws -> RecordType {
        try RecordType(
            name: "WeatherSensor",
            fields: [
                .init(name: "deviceId", type: .string), .init(name: "temperatureInFahrenheit", type: .double),
                .init(name: "windSpeedInMph", type: .int),
            ] + extra
        )
    }

    static func encode(
        _ lines: [String],
        type: RecordType,
        measurement: String? = nil,
        tags: [String] = ["deviceId"],
        timestamp: String? = nil
    )
        -> (body: String, refused: [RecordRejection])
    {
        let sink = try! LineProtocolSink(
            settings: HTTPSettings(url: "http://127.0.0.1:9/write?db=t"),
            types: [type],
            measurement: measurement,
            tags: tags,
            timestamp: timestamp,
            userAgent: "test"
        )
        let payload = Array(lines.map { $0 + "\n" }.joined().utf8)
        let (body, refused) = sink.encode(
            SinkBatch(type: type.name, idempotencyKey: "k", payload: payload[...], recordCount: lines.count)
        )!
        return (String(decoding: body, as: UTF8.self), refused)
    }

    @Test func recordsBecomePointsWithTagsTypedFieldsAndTheirTime() throws {
        let type = try Self.type([
            .init(name: "takenAt", type: .timestamp), .init(name: "calibrated", type: .bool),
            .init(name: "site", type: .string),
        ])
        let (body, refused) = Self.encode(
            [
                #"{"_id":"65a1b2c3d4e5f60718293a4b","deviceId":"WX 12,a=b","temperatureInFahrenheit":30,"windSpeedInMph":3,"takenAt":"2026-11-21T10:00:00.250Z","calibrated":true,"site":"say \"hi\" \\ there"}"#
            ],
            type: type,
            measurement: "weather station"
        )
        #expect(refused.isEmpty)
        #expect(
            body
                == #"weather\ station,deviceId=WX\ 12\,a\=b temperatureInFahrenheit=30.0,windSpeedInMph=3i,calibrated=true,site="say \"hi\" \\ there" 1795255200250000000"#
                + "\n"
        )
    }

    @Test func aTypeWithoutATimestampFieldHoldsInsteadOfMakingUpTimes() throws {
        // Times from the _id collapsed distinct readings (issue 27): nothing is sent, nothing dead-lettered.
        let type = try Self.type()
        let sink = try LineProtocolSink(
            settings: HTTPSettings(url: "http://127.0.0.1:9/write"),
            types: [type],
            measurement: nil,
            tags: ["deviceId"],
            timestamp: nil,
            userAgent: "test"
        )
        let payload = Array(
            #"{"_id":"65a1b2c3d4e5f607183a4b5c","deviceId":"A","temperatureInFahrenheit":1.5,"windSpeedInMph":2}"#.utf8
        )
        guard
            case .hold(let reason) = sink.deliver(
                SinkBatch(type: type.name, idempotencyKey: "k", payload: (payload + [0x0A])[...], recordCount: 1)
            )
        else {
            Issue.record("expected a hold")
            return
        }
        #expect(reason.contains("record type 'WeatherSensor' declares no timestamp field"), "\(reason)")
        #expect(LineProtocolEncoder.timeField(of: type, preferring: "takenAt") == nil)
    }

    @Test func eachTypeTakesTheNamedTimestampFieldElseItsFirstOne() throws {
        let type = try Self.type([
            .init(name: "receivedAt", type: .timestamp), .init(name: "takenAt", type: .timestamp),
        ])
        #expect(LineProtocolEncoder.timeField(of: type, preferring: "takenAt") == "takenAt")
        #expect(LineProtocolEncoder.timeField(of: type, preferring: nil) == "receivedAt")
        #expect(LineProtocolEncoder.timeField(of: type, preferring: "otherTypesTime") == "receivedAt")
        let (body, _) = Self.encode(
            [
                #"{"_id":"65a1b2c3d4e5f607183a4b5c","deviceId":"A","temperatureInFahrenheit":1.5,"windSpeedInMph":2,"receivedAt":"2026-01-01T00:00:01Z","takenAt":"2026-01-01T00:00:00.125Z"}"#
            ],
            type: type,
            timestamp: "takenAt"
        )
        #expect(
            body
                == "WeatherSensor,deviceId=A temperatureInFahrenheit=1.5,windSpeedInMph=2i,receivedAt=1767225601000i 1767225600125000000\n"
        )
    }

    @Test func aRecordWithoutItsTimeIsRefusedAloneNotGivenOne() throws {
        let type = try Self.type([.init(name: "takenAt", type: .timestamp, isRequired: false)])
        let (body, refused) = Self.encode(
            [
                #"{"_id":"65a1b2c3d4e5f607183a4b01","deviceId":"A","temperatureInFahrenheit":1.5,"windSpeedInMph":2,"takenAt":"2026-01-01T00:00:00Z"}"#,
                #"{"_id":"65a1b2c3d4e5f607183a4b02","deviceId":"A","temperatureInFahrenheit":1.5,"windSpeedInMph":2}"#,
                #"{"_id":"65a1b2c3d4e5f607183a4b03","deviceId":"A","temperatureInFahrenheit":1.5,"windSpeedInMph":2,"takenAt":null}"#,
            ],
            type: type
        )
        #expect(refused.map(\.index) == [1, 2])
        #expect(refused.first?.reason == "field 'takenAt' has no value: a point needs the reading's own time")
        #expect(body == "WeatherSensor,deviceId=A temperatureInFahrenheit=1.5,windSpeedInMph=2i 1767225600000000000\n")
    }

    @Test func aRecordThatCannotBeAPointIsRefusedAloneWithItsIndex() throws {
        let type = try Self.type([
            .init(name: "note", type: .string, isRequired: false), .init(name: "takenAt", type: .timestamp),
        ])
        let (body, refused) = Self.encode(
            [
                #"{"_id":"65a1b2c3d4e5f607183a4b01","deviceId":"A","temperatureInFahrenheit":1.5,"windSpeedInMph":2,"takenAt":"2026-01-01T00:00:00Z"}"#,
                #"{"_id":"65a1b2c3d4e5f607183a4b02","deviceId":"A","temperatureInFahrenheit":1.5,"windSpeedInMph":2,"note":"two\nlines","takenAt":"2026-01-01T00:00:00Z"}"#,
                #"{"_id":"65a1b2c3d4e5f607183a4b03","deviceId":"A","temperatureInFahrenheit":null,"windSpeedInMph":null,"takenAt":"2026-01-01T00:00:00Z"}"#,
            ],
            type: type,
            tags: ["deviceId"]
        )
        #expect(refused.map(\.index) == [1, 2])
        #expect(refused[0].reason == "field 'note' holds a newline, which line protocol cannot carry")
        #expect(refused[1].reason.hasPrefix("no field left once the tags are taken out"))
        #expect(body.split(separator: "\n").count == 1)
    }

    @Test func timesLineProtocolCannotHoldAndTrailingBackslashesAreRefusedAlone() throws {
        let type = try Self.type([.init(name: "takenAt", type: .timestamp)])
        let (body, refused) = Self.encode(
            [
                #"{"_id":"65a1b2c3d4e5f607183a4b01","deviceId":"A","temperatureInFahrenheit":1.5,"windSpeedInMph":2,"takenAt":"2300-01-01T00:00:00Z"}"#,
                #"{"_id":"65a1b2c3d4e5f607183a4b02","deviceId":"A","temperatureInFahrenheit":1.5,"windSpeedInMph":2,"takenAt":"+055840-01-01T00:00:00.000Z"}"#,
                #"{"_id":"65a1b2c3d4e5f607183a4b03","deviceId":"C:\\","temperatureInFahrenheit":1.5,"windSpeedInMph":2,"takenAt":"2026-01-01T00:00:00Z"}"#,
                #"{"_id":"65a1b2c3d4e5f607183a4b04","deviceId":"B","temperatureInFahrenheit":1.5,"windSpeedInMph":2,"takenAt":"2026-01-01T00:00:00Z"}"#,
            ],
            type: type
        )
        #expect(refused.map(\.index) == [0, 1, 2])
        #expect(refused[0].reason.contains("outside 1677–2262"), "\(refused[0].reason)")
        #expect(refused[1].reason.contains("not an ISO 8601 time"), "\(refused[1].reason)")
        #expect(refused[2].reason.contains("ends with a backslash"), "\(refused[2].reason)")
        #expect(body == "WeatherSensor,deviceId=B temperatureInFahrenheit=1.5,windSpeedInMph=2i 1767225600000000000\n")
    }

    @Test func aBatchWhoseRecordsAreAllRefusedIsNotSent() throws {
        let type = try Self.type([.init(name: "takenAt", type: .timestamp)])
        // Port 9 refuses connections: had anything been sent, the answer would be a retry.
        let sink = try LineProtocolSink(
            settings: HTTPSettings(url: "http://127.0.0.1:9/write?db=t"),
            types: [type],
            measurement: nil,
            tags: ["deviceId", "temperatureInFahrenheit", "windSpeedInMph"],
            timestamp: nil,
            userAgent: "test"
        )
        let payload =
            Array(
                #"{"_id":"65a1b2c3d4e5f607183a4b01","deviceId":"A","temperatureInFahrenheit":1.5,"windSpeedInMph":2,"takenAt":"2026-01-01T00:00:00Z"}"#
                    .utf8
            ) + [0x0A]
        guard
            case .stored(let rejected) = sink.deliver(
                SinkBatch(type: type.name, idempotencyKey: "k", payload: payload[...], recordCount: 1)
            )
        else {
            Issue.record("expected the record refused without sending")
            return
        }
        #expect(rejected.map(\.index) == [0])
        #expect(sink.url == "http://127.0.0.1:9/write?db=t&precision=ns")
    }

    /// What each recorded write means; every POST in the recordings is here.
    static let influx: [String: String] = [
        "write_ok_ns": "stored", "write_ok_ms": "stored", "duplicate_point_first": "stored",
        "duplicate_point_second": "stored",
        "duplicate_point_new_value": "stored", "gzip_body": "stored", "empty_body": "stored", "auth_ok": "stored",
        "field_type_conflict": "bad", "field_type_conflict_within_batch_new_measurement": "bad",
        "parse_error_among_good": "bad",
        "all_lines_unparsable": "bad", "point_beyond_retention": "bad", "only_points_beyond_retention": "bad",
        "content_encoding_gzip_but_plain_body": "retry",
        "database_not_found": "hold", "database_param_missing": "hold", "retention_policy_not_found": "hold",
        "auth_read_only_user": "hold",
        "auth_no_credentials": "hold", "auth_wrong_password_basic": "hold", "auth_wrong_password_params": "hold",
        "auth_unknown_user": "hold", "setup_create_database": "skip", "setup_create_short_rp": "skip",
    ]

    static func kind(_ outcome: UploadOutcome) -> String {
        switch outcome {
        case .stored: return "stored"
        case .badBatch: return "bad"
        case .hold: return "hold"
        case .unauthorized: return "unauthorized"
        case .retry: return "retry"
        default: return "\(outcome)"
        }
    }

    @Test func everyRecordedInfluxDBAnswerIsReadRight() throws {
        let writes = try RecordedExchange.writes(in: "influxdb-1.6.json")
        #expect(Set(writes.keys) == Set(Self.influx.keys), "a recorded write without an expectation, or the reverse")
        for (name, exchange) in writes where Self.influx[name] != "skip" {
            let outcome = LineProtocolSink.classify(
                status: exchange.status,
                retryAfter: nil,
                body: Array(exchange.responseBody.utf8),
                batchSize: 3
            )
            #expect(
                Self.kind(outcome) == Self.influx[name],
                "\(name): \(exchange.status) \(exchange.responseBody) → \(outcome)"
            )
            // A reason never quotes the refused line.
            #expect(!"\(outcome)".contains("garbage"), "\(name)")
        }
    }

    @Test func aPartialWriteSaysWhatKindWithoutQuotingData() throws {
        let writes = try RecordedExchange.writes(in: "influxdb-1.6.json")
        let conflict = try #require(writes["field_type_conflict"])
        #expect(
            LineProtocolSink.classify(
                status: 400,
                retryAfter: nil,
                body: Array(conflict.responseBody.utf8),
                batchSize: 3
            )
                == .badBatch(reason: "InfluxDB HTTP 400: partial write, field type conflict")
        )
        let missing = try #require(writes["database_not_found"])
        #expect(
            LineProtocolSink.classify(
                status: 404,
                retryAfter: nil,
                body: Array(missing.responseBody.utf8),
                batchSize: 3
            )
                == .hold(reason: "InfluxDB HTTP 404: no such database: fix upload.url (db=, rp=)")
        )
    }

    /// Messages about data quote the refused line: words in it must not pass
    /// for the engine's own configuration or encoding errors (a retried or
    /// held poison batch would stop the queue for good).
    @Test func wordsInsideQuotedDataDoNotChangeTheAnswer() {
        for quoted in ["gzip: invalid header", "database not found", "retention policy not found"] {
            let body =
                #"{"error":"partial write: field type conflict: input field "\#(quoted)" on measurement "weather" is type integer, already exists as type float dropped=1"}"#
            #expect(
                LineProtocolSink.classify(status: 400, retryAfter: nil, body: Array(body.utf8), batchSize: 3)
                    == .badBatch(reason: "InfluxDB HTTP 400: partial write, field type conflict"),
                "\(quoted)"
            )
            let unparsable = #"{"error":"unable to parse 'weather,deviceId=\#(quoted) x=1i 1': invalid field format"}"#
            #expect(
                LineProtocolSink.classify(status: 400, retryAfter: nil, body: Array(unparsable.utf8), batchSize: 3)
                    == .badBatch(reason: "InfluxDB HTTP 400: unparsable line"),
                "\(quoted)"
            )
        }
    }

    @Test func everyRecordedVictoriaMetricsAnswerIsReadRight() throws {
        let writes = try RecordedExchange.writes(in: "victoria-metrics-1.79.json")
        #expect(writes.count >= 15)
        for (name, exchange) in writes {
            let outcome = LineProtocolSink.classify(
                status: exchange.status,
                retryAfter: nil,
                body: Array(exchange.responseBody.utf8),
                batchSize: 3
            )
            // 204 for everything, even lines it dropped: only the gzip mix-up is
            // refused, and that is our fault (retried, not bisected into dead letters).
            #expect(
                Self.kind(outcome) == (name == "content_encoding_gzip_but_plain_body" ? "retry" : "stored"),
                "\(name) → \(outcome)"
            )
        }
    }
}
