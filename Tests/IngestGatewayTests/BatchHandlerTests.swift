import EdgeIngest
import Foundation
import Logging
import Testing

@testable import EdgeIngestCore
@testable import IngestGateway

/// Every exit of the gateway's batch handler (``IngestServer``'s pipeline,
/// `IngestServer+Batches.swift`), in-process: a request in, the answer and
/// the stored records out — no binary, no sockets. The binary tests
/// (`HTTPInputTests`) keep the socket-level behaviour.
@Suite struct BatchHandlerTests {
    static let apiKey = "k3y-of-the-test-account-0123456789"

    /// A server on an in-memory queue of `Reading` records (`v` int, an
    /// optional `owner` string), with one API key account unless `open`.
    struct Harness {
        let server: IngestServer
        let queue: DurableQueue
        let counters: CountingObserver

        init(
            open: Bool = false,
            ownerField: String? = nil,
            quotaRecordsPerSecond: Int? = nil,
            queueMaxRecords: Int64? = nil,
            schemaVersion: Int64 = 1,
            maxBodyBytes: Int = 4096
        ) throws {
            let type = try RecordType(
                name: "Reading",
                fields: [.init(name: "v", type: .int), .init(name: "owner", type: .string, isRequired: false)]
            )
            var configuration = QueueConfiguration(
                location: .inMemory(identifier: "batch-handler-\(UUID().uuidString)"),
                objectTypes: [type]
            )
            configuration.schemaVersion = schemaVersion
            configuration.maxRecords = queueMaxRecords
            queue = try DurableQueue.open(configuration)
            var http = GatewaySettings(listen: "127.0.0.1:0")
            http.ownerField = ownerField
            http.quotaRecordsPerSecond = quotaRecordsPerSecond
            http.quotaBurstSeconds = 1
            http.limits.maxBodyBytes = maxBodyBytes
            counters = CountingObserver()
            let context = GatewayContext(
                name: "http:test",
                settings: http,
                defaultType: "Reading",
                types: [type],
                queue: queue,
                observer: counters,
                logger: Logger(label: "test")
            )
            var accounts = ServerAccounts()
            if !open { accounts.apiKeys = ["gw-1": SecretHash.make(BatchHandlerTests.apiKey, fast: true)] }
            server = IngestServer(
                context: context,
                accounts: accounts,
                tokens: TokenSigner(key: [UInt8](repeating: 7, count: 32))
            )
        }

        /// POSTs `body` to the batch route with a valid key (unless
        /// `bearer` says otherwise) and `headers`.
        func post(
            _ body: [UInt8],
            headers: [(String, String)] = [],
            bearer: String? = BatchHandlerTests.apiKey
        ) -> HTTPServerResponse {
            var all = headers.map { (name: $0.0.lowercased(), value: $0.1) }
            if let bearer { all.append((name: "authorization", value: "Bearer " + bearer)) }
            let request = HTTPRequest(
                method: "POST",
                target: "/ingest/v1/batches",
                isHTTP10: false,
                headers: all,
                body: body
            )
            return server.respond(to: request, peer: "127.0.0.1:5000")
        }

        func post(_ text: String, headers: [(String, String)] = [], bearer: String? = apiKey) -> HTTPServerResponse {
            post(Array(text.utf8), headers: headers, bearer: bearer)
        }

        /// The stored records' JSON, oldest first.
        func stored() throws -> [String] {
            try queue.peek(limit: 1000).map { String(decoding: $0.json, as: UTF8.self) }
        }
    }

    static func line(_ n: Int, extra: String = "") -> String {
        #"{"_id":"65f1c2a9e1b2c3d4e5f6\#(String(format: "%04x", n))","v":\#(n)\#(extra)}"# + "\n"
    }

    /// The answer's JSON object.
    static func json(_ response: HTTPServerResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
    }

    static func header(_ response: HTTPServerResponse, _ name: String) -> String? {
        response.headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    // MARK: The exits, in the pipeline's order

    @Test func withoutValidCredentialsNothingIsStored() throws {
        let h = try Harness()
        for bearer in [nil, "not-the-key"] as [String?] {
            let answer = h.post(Self.line(1), bearer: bearer)
            #expect(answer.status == 401 && Self.json(answer)["error"] as? String == "unauthorized")
            #expect(Self.header(answer, "WWW-Authenticate") == "Bearer")
            #expect(!answer.trustsClient)
        }
        #expect(try h.stored().isEmpty)
    }

    @Test func anotherProtocolVersionIs501() throws {
        let h = try Harness()
        let answer = h.post(Self.line(1), headers: [("EdgeIngest-Protocol", "2")])
        #expect(answer.status == 501 && Self.json(answer)["error"] as? String == "protocol_version")
        #expect(try h.stored().isEmpty)
    }

    @Test(arguments: ["-1", "x", "1.5"])
    func aMalformedSchemaVersionIs400(_ value: String) throws {
        let h = try Harness()
        let answer = h.post(Self.line(1), headers: [("EdgeIngest-Schema-Version", value)])
        #expect(answer.status == 400 && Self.json(answer)["error"] as? String == "bad_header")
        #expect(try h.stored().isEmpty)
    }

    @Test func aNewerSchemaAsksForAResetThatCannotRecover() throws {
        let h = try Harness(schemaVersion: 1)
        let answer = h.post(Self.line(1), headers: [("EdgeIngest-Schema-Version", "2")])
        let json = Self.json(answer)
        #expect(answer.status == 409 && json["error"] as? String == "client_reset_required")
        #expect(json["reason"] as? String == "schema_too_new" && json["recoverable"] as? Bool == false)
        #expect(try h.stored().isEmpty)
    }

    @Test(arguments: ["no-dash", "-3", "abc-x", String(repeating: "n", count: 130) + "-1"])
    func aMalformedSessionIs400(_ value: String) throws {
        let h = try Harness()
        let answer = h.post(Self.line(1), headers: [("EdgeIngest-Session", value)])
        #expect(answer.status == 400 && Self.json(answer)["error"] as? String == "bad_header", "\(value)")
        #expect(try h.stored().isEmpty)
    }

    @Test func anAccountOverItsQuotaIs429WithRetryAfter() throws {
        let h = try Harness(quotaRecordsPerSecond: 2)
        let first = h.post(Self.line(1) + Self.line(2) + Self.line(3) + Self.line(4))
        #expect(first.status == 200)  // charged after: the account is now in debt
        let second = h.post(Self.line(5))
        #expect(second.status == 429 && Self.json(second)["error"] as? String == "quota_exceeded")
        #expect(Int(Self.header(second, "Retry-After") ?? "") ?? 0 >= 1)
        #expect(h.counters.snapshot.throttled == 1)
        #expect(try h.stored().count == 4)
    }

    @Test func aGzipBodyIsUndoneWithinTheBound() throws {
        let h = try Harness(maxBodyBytes: 4096)
        let body = try Gzip.compress(ArraySlice((Self.line(1) + Self.line(2)).utf8))
        let answer = h.post(body, headers: [("Content-Encoding", "gzip")])
        #expect(answer.status == 200 && Self.json(answer)["accepted"] as? Int == 2)
        let bomb = try Gzip.compress(ArraySlice([UInt8](repeating: 0x20, count: 100_000)), level: 9)
        let tooLarge = h.post(bomb, headers: [("Content-Encoding", "gzip")])
        #expect(tooLarge.status == 413 && Self.json(tooLarge)["error"] as? String == "too_large")
        let damaged = h.post([0x1f, 0x8b, 1, 2, 3], headers: [("Content-Encoding", "gzip")])
        #expect(damaged.status == 400 && Self.json(damaged)["error"] as? String == "bad_gzip")
        let brotli = h.post(Self.line(3), headers: [("Content-Encoding", "br")])
        #expect(brotli.status == 415 && Self.json(brotli)["error"] as? String == "unsupported_encoding")
        #expect(try h.stored().count == 2)
    }

    @Test func moreRecordsThanABatchMayHoldIs413() throws {
        let h = try Harness(maxBodyBytes: 1 << 20)
        let answer = h.post(String(repeating: "\n", count: IngestServer.maxRecordsPerBatch + 1))
        #expect(answer.status == 413 && Self.json(answer)["error"] as? String == "too_many_records")
        #expect(try h.stored().isEmpty)
    }

    @Test func aBatchThatCanNeverFitTheQueueIs413() throws {
        let h = try Harness(queueMaxRecords: 2)
        let answer = h.post(Self.line(1) + Self.line(2) + Self.line(3))
        #expect(answer.status == 413 && Self.json(answer)["error"] as? String == "too_large")
        #expect(try h.stored().isEmpty)
    }

    @Test func aFullQueueIs503WithRetryAfterAndSaysSoInStatus() throws {
        let h = try Harness(queueMaxRecords: 2)
        #expect(h.post(Self.line(1) + Self.line(2)).status == 200)
        let answer = h.post(Self.line(3))
        #expect(answer.status == 503 && Self.json(answer)["error"] as? String == "queue_full")
        #expect(Self.header(answer, "Retry-After") == "5")
        #expect(h.counters.snapshot.problem?.contains("queue is full") == true)
        #expect(try h.stored().count == 2)
    }

    @Test func anOlderSessionThanOneSeenMustReset() throws {
        let h = try Harness()
        #expect(h.post(Self.line(1), headers: [("EdgeIngest-Session", "box-5")]).status == 200)
        let answer = h.post(Self.line(2), headers: [("EdgeIngest-Session", "box-4")])
        let json = Self.json(answer)
        #expect(answer.status == 409 && json["reason"] as? String == "session_superseded")
        #expect(json["recoverable"] as? Bool == true)
        #expect(try h.stored().count == 1)
    }

    @Test func aBatchIsStoredOnceAndAnsweredLineByLine() throws {
        let h = try Harness()
        let body = Self.line(1) + "{not json\n" + Self.line(2, extra: #","colour":"red""#) + Self.line(3)
        let first = h.post(body)
        #expect(first.status == 200 && first.trustsClient)
        let json = Self.json(first)
        #expect(json["accepted"] as? Int == 2 && json["duplicate"] as? Int == 0)
        let refused = (json["rejected"] as? [[String: Any]] ?? []).map { "\($0["index"]!):\($0["reason"]!)" }
        #expect(refused == ["1:malformed_json", "2:unknown_field"])
        // The same again (a lost acknowledgement): nothing stored twice.
        let again = Self.json(h.post(body))
        #expect(again["accepted"] as? Int == 0 && again["duplicate"] as? Int == 2)
        // A known _id with other content: refused at its line, the rest stored.
        let conflict = Self.json(h.post(Self.line(4) + #"{"_id":"65f1c2a9e1b2c3d4e5f60001","v":99}"# + "\n"))
        #expect(conflict["accepted"] as? Int == 1)
        let conflicts = (conflict["rejected"] as? [[String: Any]] ?? []).map { "\($0["index"]!):\($0["reason"]!)" }
        #expect(conflicts == ["1:duplicate_id"])
        #expect(try h.stored() == [Self.line(1), Self.line(3), Self.line(4)].map { String($0.dropLast()) })
        let counted = h.counters.snapshot
        #expect(counted.accepted == 3 && counted.duplicates == 2)
        #expect(counted.rejectedByReason == ["malformed_json": 2, "unknown_field": 2, "duplicate_id": 1])
    }

    @Test func withAnOwnerFieldRecordsAreOwnedAndAClaimOnAnotherIsRefused() throws {
        let h = try Harness(ownerField: "owner")
        let answer = h.post(Self.line(1) + Self.line(2, extra: #","owner":"key-someone-else""#))
        let json = Self.json(answer)
        #expect(json["accepted"] as? Int == 1)
        let refused = (json["rejected"] as? [[String: Any]] ?? []).map { "\($0["index"]!):\($0["reason"]!)" }
        #expect(refused == ["1:owner_mismatch"])
        #expect(try h.stored() == [#"{"_id":"65f1c2a9e1b2c3d4e5f60001","v":1,"owner":"key-gw-1"}"#])
    }

    /// A full disk (here: SQLite told the queue file may not grow, which
    /// it answers SQLITE_FULL as ENOSPC makes it) is 503 `disk_full` with
    /// Retry-After, and nothing of the batch is stored. (The binary's
    /// behaviour on a really full file system: the fault suite.)
    @Test func aFullDiskIs503AndStoresNothing() throws {
        let h = try Harness(maxBodyBytes: 1 << 20)
        #expect(h.post(Self.line(1)).status == 200)
        let store = h.queue.state.withLock { $0.store }
        let db = try #require(store).db
        // Touched outside the queue's lock: nothing else uses this queue now.
        try db.execute("PRAGMA max_page_count = \(try db.integer("PRAGMA page_count"))")
        let big = (2...400).map { Self.line($0, extra: #","owner":"\#(String(repeating: "x", count: 200))""#) }.joined()
        let answer = h.post(big)
        #expect(answer.status == 503 && Self.json(answer)["error"] as? String == "disk_full")
        #expect(Self.header(answer, "Retry-After") == "10")
        #expect(try h.stored() == [String(Self.line(1).dropLast())])
    }

    /// A queue that cannot store (here: closed) is the server's fault: 500,
    /// nothing said about the cause.
    @Test func aQueueThatCannotStoreIs500() throws {
        let h = try Harness()
        h.queue.close()
        let answer = h.post(Self.line(1))
        #expect(answer.status == 500 && Self.json(answer)["error"] as? String == "storage")
    }

    @Test func aServerWithoutAccountsTakesAWholeBatchFromAnyone() throws {
        let h = try Harness(open: true)
        let answer = h.post(Self.line(1), bearer: nil)
        #expect(answer.status == 200 && answer.trustsClient)
        #expect(try h.stored().count == 1)
    }
}

/// What a gateway reported (``GatewayObserver``), summed.
final class CountingObserver: GatewayObserver, @unchecked Sendable {  // state under `lock`
    struct Counts {
        var lines: Int64 = 0
        var accepted: Int64 = 0
        var duplicates: Int64 = 0
        var rejectedByReason: [String: Int64] = [:]
        var throttled = 0
        var problem: String?
    }
    private let lock = NSLock()
    private var counts = Counts()

    var snapshot: Counts { lock.withLock { counts } }

    func answered(lines: Int64, accepted: Int64, duplicates: Int64, rejectedByReason: [String: Int64]) {
        lock.withLock {
            counts.lines += lines
            counts.accepted += accepted
            counts.duplicates += duplicates
            counts.rejectedByReason.merge(rejectedByReason, uniquingKeysWith: +)
            counts.problem = nil
        }
    }

    func throttled() { lock.withLock { counts.throttled += 1 } }

    func queueFull(problem: String) { lock.withLock { counts.problem = problem } }
}
