import TestSupport
import Testing

@testable import EdgeIngestCore

/// ClickHouse's answers, in its own wording and statuses (old servers send
/// data errors as 500, newer ones map codes to 400/404/401/403), and what
/// the ClickHouse sink makes of them.
struct ClickHouseSinkClassifierTests {
    static let version = "(version 23.8.16.40 (official build))"

    @Test(arguments: [
        (200, "", UploadOutcome.stored(rejected: [])),
        (
            500,
            "Code: 252. DB::Exception: Too many parts (300). Merges are processing significantly slower than inserts. (TOO_MANY_PARTS) \(version)\n",
            .retry(reason: "ClickHouse code 252", retryAfterSeconds: nil)
        ),
        (
            500,
            "Code: 27. DB::Exception: Cannot parse input: expected '\"' before: 'x'. (CANNOT_PARSE_INPUT_ASSERTION_FAILED) \(version)\n",
            .badBatch(reason: "ClickHouse code 27")
        ),
        (
            400,
            "Code: 117. DB::Exception: Unknown field found while parsing JSONEachRow format: colour. (INCORRECT_DATA) \(version)\n",
            .badBatch(reason: "ClickHouse code 117")
        ),
        (
            404, "Code: 60. DB::Exception: Table telemetry.weather does not exist. (UNKNOWN_TABLE) \(version)\n",
            .hold(reason: "ClickHouse code 60 (unknown table): fix the table or the credentials in [upload]")
        ),
        (
            516,
            "Code: 516. DB::Exception: ingest: Authentication failed: password is incorrect, or there is no user with such name. (AUTHENTICATION_FAILED) \(version)\n",
            .hold(reason: "ClickHouse code 516 (authentication failed): fix the table or the credentials in [upload]")
        ),
        (503, "", .retry(reason: "HTTP 503", retryAfterSeconds: nil)),
    ])
    func answersMeanWhatClickHouseMeans(status: Int, body: String, expected: UploadOutcome) {
        #expect(
            ClickHouseSink.classify(status: status, retryAfter: nil, body: Array(body.utf8), batchSize: 10) == expected
        )
    }

    @Test func theInsertNamesTheTableAndCarriesTheBatchKeyAsDedupToken() throws {
        var settings = HTTPSettings(url: "http://127.0.0.1:8123/?async_insert=0")
        settings.gzip = true
        let sink = try ClickHouseSink(settings: settings, database: "telemetry", table: nil, userAgent: "test")
        let batch = SinkBatch(
            type: "WeatherSensor",
            idempotencyKey: "65f1c2a9e1b2c3d4e5f60718-1000:0+500",
            payload: [][...],
            recordCount: 0,
            headers: []
        )
        #expect(sink.query(type: "WeatherSensor") == "INSERT INTO `telemetry`.`WeatherSensor` FORMAT JSONEachRow")
        #expect(
            sink.url(for: batch)
                == "http://127.0.0.1:8123/?async_insert=0&query=INSERT%20INTO%20%60telemetry%60.%60WeatherSensor%60%20FORMAT%20JSONEachRow&insert_deduplication_token=65f1c2a9e1b2c3d4e5f60718-1000%3A0%2B500"
        )
    }
}

/// The ClickHouse sink against answers recorded from a real ClickHouse
/// 18.16 (Debian 12's clickhouse-server; Tests/Support/recorded).
struct ClickHouseRecordedAnswerTests {
    static let expected: [String: String] = [
        "insert_ok_no_token": "stored", "insert_ok_repeat_same_rows": "stored", "numeric_string_for_float64": "stored",
        "unknown_field_skip_setting": "stored", "missing_field": "stored", "right_password_basic_auth": "stored",
        "gzip_body_without_enable_http_compression": "stored", "gzip_body_with_enable_http_compression": "stored",
        "empty_body": "stored",
        "insert_with_dedup_token": "hold 115", "unknown_table": "hold 60", "unknown_database": "hold 81",
        "unknown_format": "hold 73",
        "syntax_error": "hold 62", "readonly_user": "hold 164", "readonly_url_setting": "hold 164",
        "unknown_user_header": "hold 192",
        "wrong_password_basic_auth": "hold 193", "wrong_password_url_params": "hold 193",
        "string_for_float64": "bad 27", "string_for_int64": "bad 27", "unknown_field": "bad 117",
        "malformed_json_line": "bad 27",
        // Our own mistake if ever (a body marked gzip that is not): retried, not dropped.
        "content_encoding_gzip_but_plain_body": "retry 354",
        "setup_create_database": "skip", "setup_create_table": "skip",
    ]

    static func kind(_ outcome: UploadOutcome) -> String {
        func code(_ reason: String) -> String {
            reason.firstRange(of: "code ").map { " " + reason[$0.upperBound...].prefix { $0.isNumber } } ?? ""
        }
        switch outcome {
        case .stored: return "stored"
        case .badBatch(let reason): return "bad" + code(reason)
        case .hold(let reason): return "hold" + code(reason)
        case .retry(let reason, _): return "retry" + code(reason)
        default: return "\(outcome)"
        }
    }

    @Test func everyRecordedAnswerIsReadRight() throws {
        let writes = try RecordedExchange.writes(in: "clickhouse-18.16.json")
        #expect(Set(writes.keys) == Set(Self.expected.keys), "a recorded write without an expectation, or the reverse")
        for (name, exchange) in writes where Self.expected[name] != "skip" {
            let outcome = ClickHouseSink.classify(
                status: exchange.status,
                retryAfter: nil,
                body: Array(exchange.responseBody.utf8),
                batchSize: 3
            )
            #expect(
                Self.kind(outcome) == Self.expected[name],
                "\(name): \(exchange.status) \(exchange.responseBody.prefix(120)) → \(outcome)"
            )
        }
    }

    @Test func anOldServerRefusingTheTokenSaysHowToTurnItOff() throws {
        let refused = try #require(try RecordedExchange.writes(in: "clickhouse-18.16.json")["insert_with_dedup_token"])
        guard
            case .hold(let reason) = ClickHouseSink.classify(
                status: refused.status,
                retryAfter: nil,
                body: Array(refused.responseBody.utf8),
                batchSize: 3
            )
        else {
            Issue.record("expected a hold")
            return
        }
        #expect(reason.hasSuffix("set upload.deduplication_token = false"), "\(reason)")
    }

    @Test func theInsertsOurSinkSendsAreTheOnesRecorded() throws {
        let writes = try RecordedExchange.writes(in: "clickhouse-18.16.json")
        var settings = HTTPSettings(url: "http://127.0.0.1:18123/")
        settings.gzip = false
        let old = try ClickHouseSink(
            settings: settings,
            database: "telemetry",
            table: "weather",
            deduplicationToken: false,
            userAgent: "t"
        )
        let batch = SinkBatch(type: "WeatherSensor", idempotencyKey: "k1", payload: [][...], recordCount: 0)
        #expect(old.url(for: batch) == "http://127.0.0.1:18123" + (try #require(writes["insert_ok_no_token"])).target)
        let new = try ClickHouseSink(settings: settings, database: "telemetry", table: "weather", userAgent: "t")
        #expect(new.url(for: batch).hasSuffix("&insert_deduplication_token=k1"))
    }
}
