import TestSupport
import Testing

@testable import EdgeIngestModel

/// The as-read path (a line that is already its record's JSON appended as
/// read) stores exactly what the general path (builder, then writer) stores,
/// and refuses exactly what it refuses: compared on generated lines that are
/// canonical, nearly canonical, and far from it.
@Suite struct AsReadPathTests {
    static let sensor = try! RecordType(
        name: "Sensor",
        fields: [
            .init(name: "ts", type: .timestamp),
            .init(name: "deviceId", type: .string),
            .init(name: "temp", type: .double),
            .init(name: "wind", type: .int),
            .init(name: "ok", type: .bool, isRequired: false),
            .init(name: "note", type: .string, isRequired: false),
            .init(name: "unit", type: .string, isRequired: false, defaultValue: .string("F")),
            .init(name: "ref", type: .objectId, isRequired: false),
        ]
    )

    /// What one router made of a line.
    struct Outcome: Equatable {
        var stored: [UInt8] = []
        var ownID = false
        var reason: String?
    }

    static func route(_ line: String, _ router: inout ReadingRouter) -> Outcome {
        route(bytes: Array(line.utf8), &router)
    }

    /// ``route(_:_:)`` on the line's bytes (which need not be valid UTF-8).
    static func route(bytes: [UInt8], _ router: inout ReadingRouter) -> Outcome {
        var parser = NDJSONParser()
        var parsed = ParsedLine()
        var batch = EncodedBatch()
        var outcome = Outcome()
        bytes.withUnsafeBytes { raw in
            do throws(LineRejection) {
                try parser.parse(raw, into: &parsed)
                outcome.ownID = try router.route(parsed, into: &batch)
                outcome.stored = batch.runs[0].payload
            } catch {
                outcome.reason = error.reason
            }
        }
        return outcome
    }

    /// How many values (a generated `_id` included) the as-read path wrote
    /// again for the line; nil when it left the line to the general path.
    static func asReadRewrites(_ line: String, requireID: Bool = false) -> Int? {
        var parser = NDJSONParser()
        var parsed = ParsedLine()
        var batch = EncodedBatch()
        var rewrites: [ReadingRouter.AsReadRewrite] = []
        return Array(line.utf8).withUnsafeBytes { raw in
            guard (try? parser.parse(raw, into: &parsed)) != nil,
                ReadingRouter.appendAsRead(
                    parsed,
                    type: sensor,
                    requireID: requireID,
                    rewrites: &rewrites,
                    into: &batch
                ) != nil
            else { return nil }
            return rewrites.count
        }
    }

    static func takenAsRead(_ line: String, requireID: Bool = false) -> Bool {
        asReadRewrites(line, requireID: requireID) != nil
    }

    static func routers(requireID: Bool) -> (asRead: ReadingRouter, general: ReadingRouter) {
        var asRead = ReadingRouter(types: [sensor], defaultType: "Sensor", inputName: "test")
        var general = asRead
        general.storesAsRead = false
        asRead.requireID = requireID
        general.requireID = requireID
        return (asRead, general)
    }

    static let canonical =
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3,"unit":"C"}"#

    @Test func theCommonLineIsStoredAsReadByteForByte() {
        var (asRead, general) = Self.routers(requireID: false)
        #expect(Self.asReadRewrites(Self.canonical) == 0)
        let stored = Self.route(Self.canonical, &asRead)
        #expect(stored == Self.route(Self.canonical, &general))
        #expect(stored.stored == Array((Self.canonical + "\n").utf8))
        #expect(stored.ownID)
    }

    @Test func aLineWithoutIDGetsOneFirstAndTheRestAsRead() {
        let line = #"{"ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3,"unit":"C"}"#
        #expect(Self.asReadRewrites(line) == 1)
        #expect(!Self.takenAsRead(line, requireID: true))
        var (asRead, _) = Self.routers(requireID: false)
        let stored = Self.route(line, &asRead)
        #expect(!stored.ownID)
        let text = String(decoding: stored.stored, as: UTF8.self)
        #expect(text.hasPrefix(#"{"_id":""#))
        #expect(text.dropFirst(33) == "," + line.dropFirst() + "\n")
        var (_, requiring) = Self.routers(requireID: true)
        #expect(Self.route(line, &requiring).reason == "missing_id")
    }

    @Test(arguments: [
        // In the record's shape, but a value the writer writes otherwise: that value is written again.
        #"{"_id":"6740000000000000000000AB","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3,"unit":"C"}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.1Z","deviceId":"WX-1","temp":56.1,"wind":3,"unit":"C"}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T11:00:00.100+01:00","deviceId":"WX-1","temp":56.1,"wind":3,"unit":"C"}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.10,"wind":3,"unit":"C"}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.0,"wind":3,"unit":"C"}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"W\u0058","temp":56.1,"wind":3,"unit":"C"}"#,
        #"{"_id":"674000000000000000000001","ts":1763719200100,"deviceId":"WX-1","temp":56.1,"wind":3e0,"unit":"C"}"#,
    ])
    func aValueInAnotherFormIsWrittenAgainInPlace(_ line: String) {
        #expect((Self.asReadRewrites(line) ?? 0) > 0)
        var (asRead, general) = Self.routers(requireID: false)
        let stored = Self.route(line, &asRead)
        #expect(stored.reason == nil)
        #expect(stored == Self.route(line, &general))
    }

    @Test(arguments: [
        // Not in the record's shape: the general path takes it.
        #"{"_id":"674000000000000000000001","deviceId":"WX-1","ts":"2026-11-21T10:00:00.100Z","temp":56.1,"wind":3,"unit":"C"}"#,
        #"{"_id":"674000000000000000000001", "ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3,"unit":"C"}"#,
        #"{"_id":"000000000000000000000000","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3,"unit":"C"}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3,"ok":null,"unit":"C"}"#,
        #"{"_type":"Sensor","_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3,"unit":"C"}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3,"unit":"C"} "#,
    ])
    func linesInAnotherShapeTakeTheGeneralPath(_ line: String) {
        #expect(!Self.takenAsRead(line))
        var (asRead, general) = Self.routers(requireID: false)
        #expect(Self.route(line, &asRead).reason == nil)
        #expect(Self.route(line, &asRead).stored.dropFirst(33) == Self.route(line, &general).stored.dropFirst(33))
    }

    @Test(arguments: [false, true])
    func generatedLinesAreStoredAndRefusedAlikeOnBothPaths(requireID: Bool) {
        var random = SplitMix64(seed: requireID ? 22 : 23)
        var (asRead, general) = Self.routers(requireID: requireID)
        var takenAsRead = 0
        var refused = 0
        let lines = 20_000
        for _ in 0..<lines {
            let line = Self.generatedLine(&random)
            let a = Self.route(line, &asRead)
            let b = Self.route(line, &general)
            #expect(a.reason == b.reason, "\(line)")
            #expect(a.ownID == b.ownID, "\(line)")
            // Generated ids differ; everything after them is the same.
            #expect(a.ownID ? a.stored == b.stored : a.stored.dropFirst(33) == b.stored.dropFirst(33), "\(line)")
            if a.reason != nil { refused += 1 }
            if Self.takenAsRead(line, requireID: requireID) { takenAsRead += 1 }
        }
        // Both paths are exercised, and refusals too (so the comparison means something).
        #expect(takenAsRead > lines / 20)
        #expect(lines - takenAsRead - refused > lines / 10)
        #expect(refused > lines / 20)
    }

    /// A line near the canonical one: each part canonical most of the time,
    /// else varied in one of the ways readings differ in the field.
    static func generatedLine(_ random: inout SplitMix64) -> String {
        func often(_ percent: UInt64 = 85) -> Bool { random.next() % 100 < percent }
        func pick(_ choices: [String]) -> String { choices[Int(random.next() % UInt64(choices.count))] }
        var parts: [(key: String, value: String)] = []
        if often() {
            let id = String(random.next() % (1 << 40), radix: 16)
            let hex = String(repeating: "0", count: 24 - id.count) + id
            parts.append(
                ("_id", often(90) ? "\"\(hex)\"" : pick(["\"\(hex.uppercased())\"", "null", "\"xyz\"", "12"]))
            )
        }
        let ms = Int64(random.next() % 4_000_000_000_000)
        var ts: [UInt8] = []
        Timestamp.appendISO8601(milliseconds: ms, to: &ts)
        let values: [(String, String, Bool)] = [
            (
                "ts",
                often(90)
                    ? "\"\(String(decoding: ts, as: UTF8.self))\""
                    : pick(["\"2026-11-21T10:00:00Z\"", "\"2026-02-30T10:00:00.000Z\"", "\(ms)", "\"now\"", "null"]),
                true
            ),
            (
                "deviceId", often(90) ? "\"WX-\(random.next() % 50)\"" : pick(["\"W\\u0058\"", "\"Ü\"", "1", "null"]),
                true
            ),
            (
                "temp",
                often(80)
                    ? "\(random.next() % 100).\(random.next() % 9 + 1)"
                    : pick(["56.10", "1e3", "-0", "56", "\"56\"", "-0.5", "1234567890.5"]), true
            ),
            ("wind", often(90) ? "\(random.next() % 45)" : pick(["3.5", "-0", "99999999999999999999", "true"]), true),
            ("ok", pick(["true", "false", "null", "1"]), often(40)),
            ("note", pick(["\"fine\"", "\"\"", "\"a\\\"b\"", "null"]), often(30)),
            ("unit", pick(["\"C\"", "\"F\"", "null"]), often(85)),
            (
                "ref", pick(["\"674000000000000000000002\"", "\"674000000000000000000002\"".uppercased(), "\"z\""]),
                often(20)
            ),
        ]
        for (key, value, present) in values where present && (often(97) || !often(50)) {
            parts.append((key, value))
        }
        if !often(95) { parts.append((pick(["extra", "_type", "deviceId"]), pick(["\"Sensor\"", "1"]))) }
        if !often(90) { parts.shuffle(using: &random) }
        let separator = often(95) ? "" : " "
        return "{" + parts.map { "\"\($0.key)\":\(separator)\($0.value)" }.joined(separator: ",") + "}"
    }
}
