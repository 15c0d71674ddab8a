import Testing

@testable import EdgeIngest

/// ClickHouse's answers, in its own wording and statuses (old servers send
/// data errors as 500, newer ones map codes to 400/404/401/403), and what
/// the ClickHouse sink makes of them.
struct ClickHouseSinkClassifierTests {
    static let version = "(version 23.8.16.40 (official build))"

    @Test(arguments: [
        (200, "", UploadOutcome.stored(rejected: [])),
        (500, "Code: 252. DB::Exception: Too many parts (300). Merges are processing significantly slower than inserts. (TOO_MANY_PARTS) \(version)\n",
         .retry(reason: "ClickHouse code 252", retryAfterSeconds: nil)),
        (500, "Code: 27. DB::Exception: Cannot parse input: expected '\"' before: 'x'. (CANNOT_PARSE_INPUT_ASSERTION_FAILED) \(version)\n",
         .badBatch(reason: "ClickHouse code 27")),
        (400, "Code: 117. DB::Exception: Unknown field found while parsing JSONEachRow format: colour. (INCORRECT_DATA) \(version)\n",
         .badBatch(reason: "ClickHouse code 117")),
        (404, "Code: 60. DB::Exception: Table telemetry.weather does not exist. (UNKNOWN_TABLE) \(version)\n",
         .hold(reason: "ClickHouse code 60 (unknown table): fix the table or the credentials in [upload]")),
        (516, "Code: 516. DB::Exception: ingest: Authentication failed: password is incorrect, or there is no user with such name. (AUTHENTICATION_FAILED) \(version)\n",
         .hold(reason: "ClickHouse code 516 (authentication failed): fix the table or the credentials in [upload]")),
        (503, "", .retry(reason: "HTTP 503", retryAfterSeconds: nil)),
    ])
    func answersMeanWhatClickHouseMeans(status: Int, body: String, expected: UploadOutcome) {
        #expect(ClickHouseSink.classify(status: status, retryAfter: nil, body: Array(body.utf8), batchSize: 10) == expected)
    }

    @Test func theInsertNamesTheTableAndCarriesTheBatchKeyAsDedupToken() throws {
        var settings = HTTPSettings(url: "http://127.0.0.1:8123/?async_insert=0")
        settings.gzip = true
        let sink = try ClickHouseSink(settings: settings, database: "telemetry", table: nil, userAgent: "test")
        let batch = SinkBatch(type: "WeatherSensor", idempotencyKey: "65f1c2a9e1b2c3d4e5f60718-1000:0+500", payload: [][...], recordCount: 0, headers: [])
        #expect(sink.query(type: "WeatherSensor") == "INSERT INTO `telemetry`.`WeatherSensor` FORMAT JSONEachRow")
        #expect(
            sink.url(for: batch)
                == "http://127.0.0.1:8123/?async_insert=0&query=INSERT%20INTO%20%60telemetry%60.%60WeatherSensor%60%20FORMAT%20JSONEachRow&insert_deduplication_token=65f1c2a9e1b2c3d4e5f60718-1000%3A0%2B500"
        )
    }
}
