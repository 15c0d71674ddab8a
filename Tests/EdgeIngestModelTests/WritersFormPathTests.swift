import TestSupport
import Testing

@testable import EdgeIngestModel

/// The writer's-form path (a line checked and appended in one pass, before
/// any parsing) takes only lines the parser and the as-read path would
/// store unchanged, and stores exactly what they store; every other line
/// it leaves, untouched, to them. Compared on the as-read tests' generated
/// lines and on those lines damaged byte by byte.
@Suite struct WritersFormPathTests {
    typealias Outcome = AsReadPathTests.Outcome

    /// What the writer's-form path made of a line; nil when it left the line.
    static func writersForm(_ line: [UInt8], _ router: inout ReadingRouter) -> Outcome? {
        var batch = EncodedBatch()
        guard let ownID = line.withUnsafeBytes({ router.appendIfWritersForm($0, into: &batch) }) else {
            #expect(batch.count == 0, "a line left to the general path must leave nothing behind")
            return nil
        }
        #expect(batch.count == 1)
        return Outcome(stored: batch.runs[0].payload, ownID: ownID, reason: nil)
    }

    /// The parser, then the as-read path or the general one: what the agent did before.
    static func parsedPath(_ line: [UInt8], _ router: inout ReadingRouter) -> Outcome {
        AsReadPathTests.route(bytes: line, &router)
    }

    /// Checks one line both ways; returns whether the writer's-form path took it.
    @discardableResult
    static func compare(
        _ line: [UInt8],
        requireID: Bool,
        _ fast: inout ReadingRouter,
        _ parsed: inout ReadingRouter
    )
        -> Bool
    {
        guard let taken = writersForm(line, &fast) else { return false }
        let text = String(decoding: line, as: UTF8.self)
        // Only valid UTF-8 reaches a match (the parsed path sees the same bytes).
        #expect(Array(text.utf8) == line, "\(text)")
        let expected = parsedPath(line, &parsed)
        #expect(expected.reason == nil, "taken by the writer's-form path, refused by the parser's: \(text)")
        #expect(taken.ownID == expected.ownID, "\(text)")
        // A generated `_id` differs; everything after it is the same.
        #expect(
            taken.ownID ? taken.stored == expected.stored : taken.stored.dropFirst(33) == expected.stored.dropFirst(33)
        )
        // What the as-read path takes (it may write values again, as this path does).
        #expect(AsReadPathTests.takenAsRead(text, requireID: requireID), "\(text)")
        return true
    }

    static func routers(requireID: Bool) -> (fast: ReadingRouter, parsed: ReadingRouter) {
        let (asRead, _) = AsReadPathTests.routers(requireID: requireID)
        return (asRead, asRead)
    }

    @Test func theCommonLineIsTakenByteForByte() {
        var (fast, _) = Self.routers(requireID: false)
        let line = Array(AsReadPathTests.canonical.utf8)
        let taken = Self.writersForm(line, &fast)
        #expect(taken?.stored == line + [UInt8(ascii: "\n")])
        #expect(taken?.ownID == true)
    }

    @Test func aLineWithoutIDGetsOneUnlessIDsAreRequired() {
        let line = Array(#"{"ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3,"unit":"C"}"#.utf8)
        var (fast, parsed) = Self.routers(requireID: false)
        #expect(Self.compare(line, requireID: false, &fast, &parsed))
        let stored = String(decoding: Self.writersForm(line, &fast)?.stored ?? [], as: UTF8.self)
        #expect(
            stored.hasPrefix(#"{"_id":""#)
                && stored.dropFirst(33) == "," + String(decoding: line.dropFirst(), as: UTF8.self) + "\n"
        )
        var (requiring, _) = Self.routers(requireID: true)
        #expect(Self.writersForm(line, &requiring) == nil)
    }

    @Test(arguments: [
        // A value the writer writes otherwise: written again in place, as the as-read path does.
        #"{"_id":"6740000000000000000000AB","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3,"unit":"C"}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.1Z","deviceId":"WX-1","temp":56.1,"wind":3,"unit":"C"}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T11:00:00.100+01:00","deviceId":"WX-1","temp":56.1,"wind":3,"unit":"C"}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.10,"wind":3,"unit":"C"}"#,
        #"{"_id":"674000000000000000000001","ts":1763719200100,"deviceId":"WX-1","temp":56,"wind":3e0,"unit":"C"}"#,
        #"{"ts":"2026-11-21T10:00:00.1Z","deviceId":"WX-1","temp":-0.0,"wind":3,"unit":"C"}"#,
    ])
    func aValueInAnotherFormIsWrittenAgainAsTheAsReadPathDoes(_ line: String) {
        var (fast, parsed) = Self.routers(requireID: false)
        #expect(Self.compare(Array(line.utf8), requireID: false, &fast, &parsed))
        #expect(Self.writersForm(Array(line.utf8), &fast)?.stored != Array((line + "\n").utf8))
    }

    @Test(arguments: [
        // What the parser refuses, or the as-read path leaves: left to them.
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"W\u0058","temp":56.1,"wind":3}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3.5}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":03}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3,"ok":null}"#,
        #"{"_id":"000000000000000000000000","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3}"#,
        #"{"_type":"Sensor","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3} "#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3,}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":}"#,
        #"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1}"#,
        #"{"_id":"674000000000000000000001"}"# + "x",
        "{}",
        #"{"ts":"2026-11-21T10:00:00.100Z","deviceId":"WX-1","temp":56.1,"wind":3}}"#,
    ])
    func linesNotInTheWritersFormAreLeftUntouched(_ line: String) {
        var (fast, _) = Self.routers(requireID: false)
        #expect(Self.writersForm(Array(line.utf8), &fast) == nil)
    }

    @Test func invalidUTF8InAStringIsLeftToTheParser() {
        func line(deviceID: [UInt8]) -> [UInt8] {
            Array(#"{"_id":"674000000000000000000001","ts":"2026-11-21T10:00:00.100Z","deviceId":"WX"#.utf8) + deviceID
                + Array(#"","temp":56.1,"wind":3,"unit":"C"}"#.utf8)
        }
        var (fast, parsed) = Self.routers(requireID: false)
        let broken = line(deviceID: [0xC3])  // a lead byte with no continuation
        #expect(Self.writersForm(broken, &fast) == nil)
        #expect(Self.parsedPath(broken, &parsed).reason == "invalid_utf8")
        #expect(Self.compare(line(deviceID: [0xC3, 0xBC]), requireID: false, &fast, &parsed))  // "ü": taken
    }

    @Test(arguments: [false, true])
    func generatedAndDamagedLinesAreStoredAlikeOrLeft(requireID: Bool) {
        var random = SplitMix64(seed: requireID ? 43 : 44)
        var (fast, parsed) = Self.routers(requireID: requireID)
        var taken = 0
        var damagedTaken = 0
        let lines = 20_000
        for _ in 0..<lines {
            var line = Array(AsReadPathTests.generatedLine(&random).utf8)
            if Self.compare(line, requireID: requireID, &fast, &parsed) { taken += 1 }
            // The same line damaged: a byte changed, dropped or repeated.
            let at = Int(random.next() % UInt64(line.count))
            switch random.next() % 3 {
            case 0: line[at] = UInt8(truncatingIfNeeded: random.next())
            case 1: line.remove(at: at)
            default: line.insert(line[at], at: at)
            }
            if Self.compare(line, requireID: requireID, &fast, &parsed) { damagedTaken += 1 }
        }
        // The comparison means something: many lines taken, and some damaged ones still valid and taken.
        #expect(taken > lines / 20)
        #expect(damagedTaken > 0)
    }
}
