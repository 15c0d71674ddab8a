import Testing

@testable import EdgeIngestCore

@Suite struct ResponseClassifierTests {
    @Test(
        arguments: [
            (200, nil, "", UploadOutcome.stored(rejected: [])),
            (204, nil, "", .stored(rejected: [])),
            (400, nil, "", .badBatch(reason: "HTTP 400")),
            (422, nil, "", .badBatch(reason: "HTTP 422")),
            (401, nil, "", .unauthorized),
            (403, nil, "", .hold(reason: "HTTP 403: the credentials are not allowed to write here")),
            (404, nil, "", .hold(reason: "HTTP 404: wrong endpoint URL or method")),
            (408, nil, "", .retry(reason: "HTTP 408", retryAfterSeconds: nil)),
            (409, nil, "", .clientReset(reason: "HTTP 409", recoverable: true)),
            (410, nil, "", .clientReset(reason: "HTTP 410", recoverable: true)),
            (
                409, nil, #"{"error":"client_reset_required","reason":"session_lost"}"#,
                .clientReset(reason: "HTTP 409 session_lost", recoverable: true)
            ),
            (
                410, nil, #"{"reason": "schema_changed", "recoverable": false}"#,
                .clientReset(reason: "HTTP 410 schema_changed", recoverable: false)
            ),
            (413, nil, "", .tooLarge),
            (429, "7", "", .retry(reason: "HTTP 429", retryAfterSeconds: 7)),
            (429, " 2 \r\n", "", .retry(reason: "HTTP 429", retryAfterSeconds: 2)),
            (503, "Wed, 21 Oct 2015 07:28:00 GMT", "", .retry(reason: "HTTP 503", retryAfterSeconds: nil)),
            (500, nil, "Internal", .retry(reason: "HTTP 500", retryAfterSeconds: nil)),
            // ClickHouse reports data errors as 500 with "Code: N".
            (500, nil, "Code: 27. DB::Exception: Cannot parse input", .badBatch(reason: "ClickHouse code 27")),
            (
                500, nil, "Code: 252. DB::Exception: Too many parts",
                .retry(reason: "ClickHouse code 252", retryAfterSeconds: nil)
            ),
            (500, nil, "Code: 117. DB::Exception: Unknown field", .badBatch(reason: "ClickHouse code 117")),
            // …and a wrong table, query or credentials the same way: the same table as the ClickHouse sink's.
            (
                500, nil, "Code: 60. DB::Exception: Table telemetry.weather does not exist",
                .hold(reason: "ClickHouse code 60 (unknown table)")
            ),
            (
                500, nil, "Code: 62. DB::Exception: Syntax error",
                .hold(reason: "ClickHouse code 62 (syntax error in the insert)")
            ),
            (501, nil, "", .hold(reason: "HTTP 501: the server does not implement this protocol")),
            (302, nil, "", .hold(reason: "HTTP 302: not a status this protocol defines")),
        ] as [(Int, String?, String, UploadOutcome)]
    )
    func statusTable(status: Int, retryAfter: String?, body: String, expected: UploadOutcome) {
        #expect(
            ResponseClassifier.classify(status: status, retryAfter: retryAfter, body: Array(body.utf8), batchSize: 10)
                == expected
        )
    }

    @Test func perRecordRejectionsInA200Body() {
        let body =
            #"{"accepted":8,"rejected":[{"index":3,"reason":"bad unit"},{"index": 7}]}"#
        #expect(
            ResponseClassifier.classify(status: 200, retryAfter: nil, body: Array(body.utf8), batchSize: 10)
                == .stored(rejected: [
                    RecordRejection(index: 3, reason: "bad unit"),
                    RecordRejection(index: 7, reason: "rejected by the backend"),
                ])
        )
        #expect(
            ResponseClassifier.classify(
                status: 200,
                retryAfter: nil,
                body: Array(#"{"rejected":null}"#.utf8),
                batchSize: 2
            )
                == .stored(rejected: [])
        )
    }

    /// Guessing which record an unreadable index meant would dead-letter
    /// the wrong one: the batch stays queued and uploading holds instead.
    @Test(arguments: [
        (#"{"rejected":[{"index":1e400}]}"#, "not valid JSON"),
        (#"{"rejected":[{"index":1e300}]}"#, "is 1e+300"),
        (#"{"rejected":[{"index":99,"reason":"out of batch"}]}"#, "is 99, not a record of the batch (0–9)"),
        (#"{"rejected":[{"index":-1}]}"#, "is -1"),
        (#"{"rejected":[{"index":2.5}]}"#, "is 2.5"),
        (#"{"rejected":[{"index":"3"}]}"#, "is a string"),
        (#"{"rejected":[{"reason":"x"}]}"#, "has no \"index\""),
        (#"{"rejected":{"index":1}}"#, "is not an array"),
        (#"{"rejected":[{"index":1}"#, "not valid JSON"),
    ])
    func anUnreadableRejectionListIsAProtocolError(_ body: String, _ detail: String) {
        let outcome = ResponseClassifier.classify(status: 200, retryAfter: nil, body: Array(body.utf8), batchSize: 10)
        guard case .hold(let reason) = outcome else {
            Issue.record("expected a hold, got \(outcome)")
            return
        }
        #expect(reason.contains(detail), "\(reason)")
        #expect(reason.contains("a protocol error in the backend; nothing was deleted"))
    }

    @Test(
        arguments: [
            (0, nil, 0.0, 0.0), (0, nil, 0.999, 0.4995), (3, nil, 0.5, 2.0), (30, nil, 1.0, 60.0),
            (0, 5.0, 0.1, 5.0), (10, 1.0, 1.0, 60.0), (0, 99_999.0, 0.0, 3_600.0),
        ] as [(Int, Double?, Double, Double)]
    )
    func backoffIsCappedJitteredAndHonoursRetryAfter(attempt: Int, retryAfter: Double?, unit: Double, expected: Double)
    {
        #expect(abs(Backoff().delay(attempt: attempt, retryAfterSeconds: retryAfter, unit: unit) - expected) < 1e-9)
    }

    @Test func gzipRoundTrips() throws {
        let text = Array(String(repeating: #"{"deviceId":"WX","windSpeedInMph":2}\n"#, count: 1000).utf8)
        let compressed = try Gzip.compress(text[...])
        #expect(compressed.count < text.count / 10)
        #expect(compressed.prefix(2) == [0x1F, 0x8B])
        #expect(try Gzip.decompress(compressed) == text)
    }
}
